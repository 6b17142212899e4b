/**
 * Seeded Gaussian noise: the same seed gives the same numbers on every platform and engine.
 *
 * Uniforms come from xoshiro128** (32-bit integer ops only), seeded from the integer seed through
 * a bijective mixer, so distinct seeds up to 2^53-1 give distinct streams. Gaussians come from
 * Marsaglia's polar method with our own logarithm: only +, -, *, / and sqrt, which IEEE 754 rounds
 * exactly, so no engine's Math.log/sin/cos approximation can change a value.
 */

import { getRandomValues } from 'node:crypto';

export const MAX_SEED = Number.MAX_SAFE_INTEGER;

const TWO_POW_32 = 4294967296;
const INV_TWO_POW_31 = 1 / 2147483648;
const LN2 = 0.6931471805599453;
const SQRT_HALF = 0.7071067811865476;

export function checkSeed(seed: number): void {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`seed must be an integer in [0, ${MAX_SEED}], got ${seed}`);
  }
}

/** murmur3's 32-bit finalizer: a bijection with good avalanche. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Natural log for 0 < x <= 1 by range reduction to [sqrt(1/2), sqrt(2)) and the atanh series. */
function ln(x: number): number {
  let e = 0;
  // Exact scaling by 2; x is uniform on (0,1) here, so this loops about once on average.
  while (x < 0.5) {
    x *= 2;
    e--;
  }
  if (x < SQRT_HALF) {
    x *= 2;
    e--;
  }
  const f = (x - 1) / (x + 1); // |f| < 0.172
  const f2 = f * f;
  // 2 * atanh(f) = 2f (1 + f^2/3 + f^4/5 + ...); 11 terms reach double precision for |f| < 0.172.
  let s = 1 / 21;
  s = s * f2 + 1 / 19;
  s = s * f2 + 1 / 17;
  s = s * f2 + 1 / 15;
  s = s * f2 + 1 / 13;
  s = s * f2 + 1 / 11;
  s = s * f2 + 1 / 9;
  s = s * f2 + 1 / 7;
  s = s * f2 + 1 / 5;
  s = s * f2 + 1 / 3;
  s = s * f2 + 1;
  return e * LN2 + 2 * f * s;
}

/** A deterministic stream of unit Gaussians; reading in chunks of any size gives the same sequence. */
export class GaussianStream {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spare = 0;
  private hasSpare = false;

  constructor(seed: number) {
    checkSeed(seed);
    const lo = seed >>> 0;
    const hi = Math.floor(seed / TWO_POW_32) >>> 0;
    // (s0, s1) is a bijection of (lo, hi); s2, s3 fill the rest and keep the state non-zero.
    this.s0 = fmix32(lo ^ 0x9e3779b9);
    this.s1 = fmix32(hi ^ 0x243f6a88);
    this.s2 = fmix32(((this.s0 + 0x6a09e667) >>> 0) ^ this.s1);
    this.s3 = fmix32(((this.s1 + 0xbb67ae85) >>> 0) ^ this.s0);
    for (let i = 0; i < 8; i++) this.nextUint32(); // let the seed spread through the state
  }

  /** xoshiro128**: the next uniform 32-bit integer. */
  nextUint32(): number {
    const s1 = this.s1;
    const m = Math.imul(s1, 5);
    const result = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return result;
  }

  /** The next unit Gaussian (float64; fill() rounds to float32). */
  next(): number {
    if (this.hasSpare) {
      this.hasSpare = false;
      return this.spare;
    }
    for (;;) {
      const u = this.nextUint32() * INV_TWO_POW_31 - 1;
      const v = this.nextUint32() * INV_TWO_POW_31 - 1;
      const s = u * u + v * v;
      if (s >= 1 || s === 0) continue;
      const k = Math.sqrt((-2 * ln(s)) / s);
      this.spare = v * k;
      this.hasSpare = true;
      return u * k;
    }
  }

  /** Fills `out` with the next out.length Gaussians and returns it. */
  fill(out: Float32Array): Float32Array {
    for (let i = 0; i < out.length; i++) out[i] = this.next();
    return out;
  }

  /** The next `length` Gaussians in a new array: pass `(n) => stream.noise(n)` to Scheduler.step. */
  noise(length: number): Float32Array {
    if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`length must be a non-negative integer, got ${length}`);
    return this.fill(new Float32Array(length));
  }
}

/** `length` unit Gaussians for `seed` (the first `length` values of new GaussianStream(seed)). */
export function gaussianNoise(seed: number, length: number): Float32Array {
  return new GaussianStream(seed).noise(length);
}

/** A fresh random seed in [0, 2^53-1], for requests that name none. */
export function randomSeed(): number {
  const [hi, lo] = getRandomValues(new Uint32Array(2));
  return (hi! >>> 11) * TWO_POW_32 + lo!;
}
