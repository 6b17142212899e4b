/**
 * Footprints: the pixels around a module that a read or a repair weighs, the same for every
 * module (modules are whole pixels), as offsets from its top-left pixel. Cores are what a repair
 * may change; read kernels are how a phone's blur sees the module's centre.
 */
import type { Resolved } from './options.ts';

/** Core growth step, as a fraction of the module. */
const GROWTH = 0.1;

/** Pixels around a module: offsets from its top-left. */
export interface Footprint {
  /** (dy * stride + dx) in the region buffer. */
  readonly offsets: Int32Array;
  /** (dy * m + dx): the pixel's index within the module, for per-module shape masks. */
  readonly cells: Int32Array;
  readonly weights: Float32Array;
  /** The first `inner` entries have weight 1 (the core proper); the rest is the feather. */
  readonly inner: number;
  /**
   * 1 for pixels at least the camera blur inside the core's edge: what still reads in the
   * core's colour once a phone's blur has eaten into its rim (the area share counts these).
   */
  readonly solid: Uint8Array;
}

/**
 * A core: pixels of a module of side `m` within `ratio` of its half side from the centre
 * (Euclidean for a disk, Chebyshev for a square) at weight 1, then a feather of m / 8 falling
 * to 0, cut at the module's edge. Always holds the central pixel(s).
 */
function coreOf(m: number, stride: number, ratio: number, square: boolean, blur: number): Footprint {
  const half = m / 2;
  const radius = Math.max(ratio * half, 0.75);
  const feather = Math.max(1, m / 8);
  const inner: number[][] = [];
  const soft: number[][] = [];
  for (let y = 0; y < m; y++) {
    for (let x = 0; x < m; x++) {
      const dx = x + 0.5 - half;
      const dy = y + 0.5 - half;
      const d = square ? Math.max(Math.abs(dx), Math.abs(dy)) : Math.sqrt(dx * dx + dy * dy);
      const solid = d <= radius - blur ? 1 : 0;
      if (d <= radius) inner.push([y * stride + x, y * m + x, 1, solid]);
      else if (d < radius + feather) {
        const t = 1 - (d - radius) / feather;
        soft.push([y * stride + x, y * m + x, t * t * (3 - 2 * t), 0]);
      }
    }
  }
  const all = [...inner, ...soft];
  return {
    offsets: Int32Array.from(all, (e) => e[0]!),
    cells: Int32Array.from(all, (e) => e[1]!),
    weights: Float32Array.from(all, (e) => e[2]!),
    inner: inner.length,
    solid: Uint8Array.from(all, (e) => e[3]!),
  };
}

/**
 * The far read's blur in modules for a code `side` modules across (quiet zone included): each
 * pixel of the far photo averages a square side / farSide modules wide (a box's sigma is its
 * width over sqrt 12), then the camera blurs by farBlur of those pixels. About 0.45 modules for
 * version 10 and 0.22 for version 2 at the default 140 px; 0 when farBlur is 0.
 */
export function farReadSigma(options: Pick<Resolved, 'farSide' | 'farBlur'>, side: number): number {
  if (options.farBlur === 0) return 0;
  return (Math.sqrt(1 / 12 + options.farBlur ** 2) * side) / options.farSide;
}

/** Gaussian weights (sum 1) within 2.5 sigma of a module's centre, as offsets from its top-left pixel. */
export function readKernel(m: number, stride: number, sigma: number): Footprint {
  const half = m / 2;
  const reach = Math.ceil(2.5 * sigma + half);
  const entries: number[][] = [];
  for (let y = -reach; y < m + reach; y++) {
    for (let x = -reach; x < m + reach; x++) {
      const dx = x + 0.5 - half;
      const dy = y + 0.5 - half;
      const d2 = dx * dx + dy * dy;
      if (d2 > (2.5 * sigma) ** 2 + 0.5) continue;
      entries.push([y * stride + x, Math.exp(-d2 / (2 * sigma * sigma))]);
    }
  }
  const sum = entries.reduce((s, e) => s + e[1]!, 0);
  return {
    offsets: Int32Array.from(entries, (e) => e[0]!),
    cells: new Int32Array(entries.length).fill(-1),
    weights: Float32Array.from(entries, (e) => e[1]! / sum),
    inner: entries.length,
    solid: new Uint8Array(entries.length),
  };
}


/**
 * A module's cores from `ratio` up to the whole module, growing by GROWTH of the module: a repair
 * takes the smallest that meets its goals.
 */
export function coreSteps(m: number, stride: number, ratio: number, square: boolean, blur: number): Footprint[] {
  const list: Footprint[] = [];
  for (let r = ratio; ; r = Math.min(1, r + GROWTH)) {
    list.push(coreOf(m, stride, r, square, blur));
    if (r >= 1) break;
  }
  return list;
}
