/**
 * A second reading of a code ZXing found but could not decode. ZXing reports where such a
 * symbol is (its four corners) and its version; it failed because reading one binarized
 * pixel per module centre misread too many modules, which is what artistic codes do to a
 * single-pixel sampler. Here every module is read again as the mean of a small disk around
 * its centre (what a phone's optics do to the pixels before its decoder samples one), judged
 * against the modules around it, and the result is drawn as a clean code for ZXing to decode
 * with the usual Reed-Solomon correction. The geometry and the error correction stay ZXing's;
 * only the module reading changes, so what decodes is the symbol ZXing itself located.
 */
import { rawImage } from '../image/raw.ts';
import type { LumaImage } from '../image/luma.ts';

export interface Point {
  readonly x: number;
  readonly y: number;
}

/** A located symbol: its corners (grid corners (0,0), (N,0), (N,N), (0,N)) and modules per side. */
export interface LocatedSymbol {
  readonly topLeft: Point;
  readonly topRight: Point;
  readonly bottomRight: Point;
  readonly bottomLeft: Point;
  readonly size: number;
}

/** How a module's mean is judged: against its 7x7-module neighbourhood, or one threshold for the code. */
export type ModuleThreshold = 'local' | 'global';

/** Unit square -> quadrilateral (projective), corners in order TL, TR, BR, BL. */
function squareToQuad(q: LocatedSymbol): (u: number, v: number) => Point {
  const [x0, y0, x1, y1, x2, y2, x3, y3] = [q.topLeft.x, q.topLeft.y, q.topRight.x, q.topRight.y, q.bottomRight.x, q.bottomRight.y, q.bottomLeft.x, q.bottomLeft.y];
  const sx = x0 - x1 + x2 - x3;
  const sy = y0 - y1 + y2 - y3;
  let a: number, b: number, d: number, e: number, g: number, h: number;
  if (Math.abs(sx) < 1e-9 && Math.abs(sy) < 1e-9) {
    [a, b, d, e, g, h] = [x1 - x0, x3 - x0, y1 - y0, y3 - y0, 0, 0];
  } else {
    const dx1 = x1 - x2;
    const dx2 = x3 - x2;
    const dy1 = y1 - y2;
    const dy2 = y3 - y2;
    const den = dx1 * dy2 - dx2 * dy1;
    g = (sx * dy2 - dx2 * sy) / den;
    h = (dx1 * sy - sx * dy1) / den;
    a = x1 - x0 + g * x1;
    b = x3 - x0 + h * x3;
    d = y1 - y0 + g * y1;
    e = y3 - y0 + h * y3;
  }
  return (u, v) => {
    const w = g * u + h * v + 1;
    return { x: (a * u + b * v + x0) / w, y: (d * u + e * v + y0) / w };
  };
}

function bilinear(luma: LumaImage, x: number, y: number): number {
  const { width, height, data } = luma;
  const fx = Math.min(width - 1, Math.max(0, x - 0.5));
  const fy = Math.min(height - 1, Math.max(0, y - 0.5));
  const x0 = Math.floor(fx);
  const y0 = Math.floor(fy);
  const x1 = Math.min(width - 1, x0 + 1);
  const y1 = Math.min(height - 1, y0 + 1);
  const tx = fx - x0;
  const ty = fy - y0;
  const top = data[y0 * width + x0]! * (1 - tx) + data[y0 * width + x1]! * tx;
  const bottom = data[y1 * width + x0]! * (1 - tx) + data[y1 * width + x1]! * tx;
  return top * (1 - ty) + bottom * ty;
}

// The disk: its centre and eight points on a ring at 0.7 of its radius, so the mean does not
// depend on how many pixels a module spans.
const RING = Array.from({ length: 8 }, (_, k) => [Math.cos((k * Math.PI) / 4) * 0.7, Math.sin((k * Math.PI) / 4) * 0.7] as const);

/** Mean luminance of each module's central disk of `radius` modules, row-major. */
export function moduleMeans(luma: LumaImage, symbol: LocatedSymbol, radius: number): Float32Array {
  const n = symbol.size;
  const map = squareToQuad(symbol);
  const means = new Float32Array(n * n);
  for (let j = 0; j < n; j++) {
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (const [dx, dy] of [[0, 0] as const, ...RING]) {
        const p = map((i + 0.5 + dx * radius) / n, (j + 0.5 + dy * radius) / n);
        sum += bilinear(luma, p.x, p.y);
      }
      means[j * n + i] = sum / (RING.length + 1);
    }
  }
  return means;
}

/** 1 = dark per module: each mean against its threshold. */
export function moduleBits(means: Float32Array, size: number, threshold: ModuleThreshold): Uint8Array {
  const bits = new Uint8Array(size * size);
  if (threshold === 'global') {
    const t = otsu(means);
    for (let i = 0; i < bits.length; i++) bits[i] = means[i]! < t ? 1 : 0;
    return bits;
  }
  const k = 3;
  for (let j = 0; j < size; j++) {
    for (let i = 0; i < size; i++) {
      let sum = 0;
      let count = 0;
      for (let y = Math.max(0, j - k); y <= Math.min(size - 1, j + k); y++) {
        for (let x = Math.max(0, i - k); x <= Math.min(size - 1, i + k); x++, count++) sum += means[y * size + x]!;
      }
      bits[j * size + i] = means[j * size + i]! < sum / count ? 1 : 0;
    }
  }
  return bits;
}

/** Otsu's threshold over the module means (between-class variance at its largest). */
function otsu(values: Float32Array): number {
  const hist = new Float64Array(256);
  for (const v of values) hist[Math.min(255, Math.max(0, Math.round(v)))]!++;
  const total = values.length;
  let sumAll = 0;
  for (let t = 0; t < 256; t++) sumAll += t * hist[t]!;
  let best = 128;
  let bestVar = -1;
  let weight = 0;
  let sum = 0;
  for (let t = 0; t < 256; t++) {
    weight += hist[t]!;
    if (weight === 0 || weight === total) continue;
    sum += t * hist[t]!;
    const m0 = sum / weight;
    const m1 = (sumAll - sum) / (total - weight);
    const between = weight * (total - weight) * (m0 - m1) ** 2;
    if (between > bestVar) [bestVar, best] = [between, t + 0.5];
  }
  return best;
}

/** The modules as a clean code: `modulePx` px each, dark 0 / light 255, a 4-module quiet zone. */
export function pureCode(bits: Uint8Array, size: number, modulePx = 3): LumaImage {
  const side = (size + 8) * modulePx;
  const data = new Uint8Array(side * side).fill(255);
  for (let j = 0; j < size; j++) {
    for (let i = 0; i < size; i++) {
      if (!bits[j * size + i]) continue;
      for (let y = 0; y < modulePx; y++) {
        const o = ((j + 4) * modulePx + y) * side + (i + 4) * modulePx;
        data.fill(0, o, o + modulePx);
      }
    }
  }
  return rawImage(data, side, side, 1) as LumaImage;
}
