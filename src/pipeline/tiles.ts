/**
 * Overlapping tiles over a canvas larger than the model's native area, and the weights that blend
 * them without seams.
 *
 * Why: a UNet (and the VAE's mid-block) attends over every latent position of its input at once,
 * so memory grows with the square of the area. A native-size SD1.5 generation attends over
 * 96×96 = 9,216 latent tokens; a 1536×1536 refinement in one call would attend over 36,864 (16×
 * the attention scores), an UltraHD one over 129,600 (198×). Cut into native-size tiles, no call
 * sees more tokens than a native-size generation. The tiles overlap by `overlap` cells and each
 * one's contribution ramps from 0 to 1 across an overlap it shares with a neighbour (a raised
 * cosine), while canvas edges keep full weight; the weighted mean is what the sampler steps on
 * (MultiDiffusion), so neighbouring tiles agree on their shared strip at every step and no seam
 * forms. The weights sum to a positive value everywhere, so the mean is defined at every cell.
 */
import type { Rect } from '../image/canvas.ts';

/** One call may exceed the native area by this much (e.g. 672×896 at a 768² native size: the spec's SD 3:4). */
export const NATIVE_SLACK = 1.05;

export interface TileGrid {
  readonly width: number;
  readonly height: number;
  readonly tiles: readonly Rect[];
  /** Overlap asked for, in cells (actual overlaps are at least this, up to the tile size). */
  readonly overlap: number;
}

/** Start offsets of tiles of `tile` cells covering `length` cells with at least `overlap` shared. */
export function tileStarts(length: number, tile: number, overlap: number): number[] {
  if (!(tile > overlap && overlap >= 0)) throw new RangeError(`tile ${tile} must exceed overlap ${overlap}`);
  if (length <= tile) return [0];
  const n = Math.ceil((length - overlap) / (tile - overlap));
  return Array.from({ length: n }, (_, i) => Math.round((i * (length - tile)) / (n - 1)));
}

/** Native-size latent tiles (side `size`), overlapping by at least `overlap` latents. */
export interface LatentTiling {
  readonly size: number;
  readonly overlap: number;
}

/** The tiling of a model: tiles of its native size (whole multiples of its sizeMultiple), a quarter tile of overlap. */
export function latentTiling(nativeSize: number, multiple = 8): LatentTiling {
  const size = Math.max(1, Math.floor(nativeSize / multiple) * (multiple / 8));
  return { size, overlap: Math.max(1, Math.round(size / 4)) };
}

/**
 * The tiles a w × h latent canvas is cut into, or undefined when one call takes it whole (up to
 * the native area, with NATIVE_SLACK): the one rule for the denoiser and the VAE alike.
 */
export function canvasTiles(w: number, h: number, tiling: LatentTiling): TileGrid | undefined {
  if (h * w <= tiling.size * tiling.size * NATIVE_SLACK) return undefined;
  return tileGrid(w, h, Math.min(w, tiling.size), Math.min(h, tiling.size), tiling.overlap);
}

/** Tiles of at most tileWidth × tileHeight cells over a width × height canvas. */
export function tileGrid(width: number, height: number, tileWidth: number, tileHeight: number, overlap: number): TileGrid {
  const xs = tileStarts(width, tileWidth, overlap);
  const ys = tileStarts(height, tileHeight, overlap);
  const tiles: Rect[] = [];
  for (const y of ys) for (const x of xs) tiles.push({ x, y, width: Math.min(tileWidth, width), height: Math.min(tileHeight, height) });
  return { width, height, tiles, overlap };
}

/** Raised-cosine ramp over `band` cells: ~0 at the tile edge, 1 from `band` cells in. */
function ramp(d: number, band: number): number {
  if (band <= 0 || d >= band) return 1;
  const t = (d + 0.5) / band;
  return 0.5 - 0.5 * Math.cos(Math.PI * t);
}

/**
 * Blend weights of one tile (height × width, row-major): ramps on the sides where the tile has a
 * neighbour (an inner edge of the canvas), full weight toward the canvas edges.
 */
export function tileWeights(tile: Rect, grid: Pick<TileGrid, 'width' | 'height' | 'overlap'>): Float32Array {
  const { width: w, height: h } = tile;
  const band = grid.overlap;
  const left = tile.x > 0;
  const right = tile.x + w < grid.width;
  const top = tile.y > 0;
  const bottom = tile.y + h < grid.height;
  const wx = Float32Array.from({ length: w }, (_, x) => Math.min(left ? ramp(x, band) : 1, right ? ramp(w - 1 - x, band) : 1));
  const wy = Float32Array.from({ length: h }, (_, y) => Math.min(top ? ramp(y, band) : 1, bottom ? ramp(h - 1 - y, band) : 1));
  const out = new Float32Array(w * h);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) out[y * w + x] = wx[x]! * wy[y]!;
  return out;
}

/**
 * Accumulates per-tile planar values ([C, tile.h, tile.w]) into a canvas ([C, H, W]) as a
 * weighted mean. `scale` maps tile/canvas cells to the values' resolution (8 for pixels of a
 * latent grid), so latent tiles can blend decoded pixels too.
 */
export class TileBlender {
  private readonly sum: Float32Array;
  private readonly weight: Float32Array;
  private readonly plane: number;

  constructor(
    private readonly channels: number,
    private readonly width: number,
    height: number,
  ) {
    this.plane = width * height;
    this.sum = new Float32Array(channels * this.plane);
    this.weight = new Float32Array(this.plane);
  }

  /** Adds one tile's values at `rect` (in this blender's units) with per-cell `weights`. */
  add(values: Float32Array, rect: Rect, weights: Float32Array): void {
    const { x: x0, y: y0, width: w, height: h } = rect;
    const tilePlane = w * h;
    for (let y = 0; y < h; y++) {
      const row = (y0 + y) * this.width + x0;
      for (let x = 0; x < w; x++) this.weight[row + x]! += weights[y * w + x]!;
    }
    for (let c = 0; c < this.channels; c++) {
      const base = c * this.plane;
      const src = c * tilePlane;
      for (let y = 0; y < h; y++) {
        const row = base + (y0 + y) * this.width + x0;
        const from = src + y * w;
        for (let x = 0; x < w; x++) this.sum[row + x]! += values[from + x]! * weights[y * w + x]!;
      }
    }
  }

  /** The weighted mean (into `out` when given); resets for the next round. */
  finish(out = new Float32Array(this.channels * this.plane)): Float32Array {
    for (let c = 0; c < this.channels; c++) {
      const base = c * this.plane;
      for (let p = 0; p < this.plane; p++) out[base + p] = this.sum[base + p]! / this.weight[p]!;
    }
    this.sum.fill(0);
    this.weight.fill(0);
    return out;
  }
}

/** Copies the [C, rect] window of a planar [C, H, W] array into a new [C, rect.h, rect.w] one. */
export function cropPlanes(src: Float32Array, channels: number, width: number, height: number, rect: Rect): Float32Array {
  const out = new Float32Array(channels * rect.width * rect.height);
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < rect.height; y++) {
      const from = c * width * height + (rect.y + y) * width + rect.x;
      out.set(src.subarray(from, from + rect.width), (c * rect.height + y) * rect.width);
    }
  }
  return out;
}
