/**
 * The pixel work of a simulated phone capture (capture-family.ts says what to simulate): the
 * code's frame cut out of the image as luminance, then per capture a warp (scale, rotation,
 * perspective), a motion streak, a separable defocus blur, and one pass for light, contrast
 * and sensor noise. Plain JS on Float32 planes: at the family's sizes (frames of at most
 * ~560x560) that is a few ms, and none of it waits on sharp's thread pool, which the worker's
 * other finishing threads share.
 */
import { downscaleArea, type LumaImage } from '../image/luma.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import { mulberry32 } from '../util/mulberry32.ts';

// BT.601 in 10-bit fixed point, the weights of src/image/luma.ts (and of ZXing).
const WR = 306;
const WG = 601;
const WB = 117;

/** A rectangle in image pixels. */
export interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/**
 * The part of the source image a capture can see, as luminance, possibly area-reduced:
 * `scale` of its pixels per source pixel; `region` is where it lies in the source image.
 */
export interface FrameSource {
  readonly luma: LumaImage;
  readonly region: Rect;
  readonly scale: number;
}

/**
 * Luminance of `region` (clipped to the image), area-averaged down so that it holds at most
 * `maxScale` of its pixels per source pixel (1: never enlarged). Made once per image and shared
 * by all its captures: a 4K source is read once.
 */
export function frameSource(image: RawImage, region: Rect, maxScale: number): FrameSource {
  const x0 = Math.max(0, Math.floor(region.x));
  const y0 = Math.max(0, Math.floor(region.y));
  const x1 = Math.min(image.width, Math.ceil(region.x + region.width));
  const y1 = Math.min(image.height, Math.ceil(region.y + region.height));
  if (x1 <= x0 || y1 <= y0) throw new RangeError(`the capture frame ${JSON.stringify(region)} misses the ${image.width}x${image.height} image`);
  const clipped = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
  const crop = cropLuma(image, clipped);
  const scale = Math.min(1, maxScale);
  if (scale >= 1) return { luma: crop, region: clipped, scale: 1 };
  const w = Math.max(1, Math.round(clipped.width * scale));
  const h = Math.max(1, Math.round(clipped.height * scale));
  return { luma: downscaleArea(crop, w, h), region: clipped, scale: w / clipped.width };
}

/** The same source area-reduced further to `scale` (< source.scale) of source pixels. */
export function reduceSource(source: FrameSource, scale: number): FrameSource {
  if (scale >= source.scale) return source;
  const w = Math.max(1, Math.round(source.region.width * scale));
  const h = Math.max(1, Math.round(source.region.height * scale));
  return { luma: downscaleArea(source.luma, w, h), region: source.region, scale: w / source.region.width };
}

function cropLuma(image: RawImage, r: Rect): LumaImage {
  const { data, width, channels } = image;
  const out = new Uint8Array(r.width * r.height);
  for (let y = 0; y < r.height; y++) {
    let s = ((r.y + y) * width + r.x) * channels;
    const o = y * r.width;
    if (channels === 1) {
      out.set(data.subarray(s, s + r.width), o);
      continue;
    }
    for (let x = 0; x < r.width; x++, s += channels) out[o + x] = (WR * data[s]! + WG * data[s + 1]! + WB * data[s + 2]! + 512) >> 10;
  }
  return rawImage(out, r.width, r.height, 1) as LumaImage;
}

/** A 3x3 homography, row-major, h33 = 1 after normalisation is not assumed. */
export type Matrix3 = readonly [number, number, number, number, number, number, number, number, number];

export function multiply(a: Matrix3, b: Matrix3): Matrix3 {
  const out: number[] = [];
  for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) out.push(a[r * 3]! * b[c]! + a[r * 3 + 1]! * b[3 + c]! + a[r * 3 + 2]! * b[6 + c]!);
  return out as unknown as Matrix3;
}

/** The homography taking the four `from` points to the four `to` points. */
export function homography(from: ReadonlyArray<readonly [number, number]>, to: ReadonlyArray<readonly [number, number]>): Matrix3 {
  const A: number[][] = [];
  for (let i = 0; i < 4; i++) {
    const [x, y] = from[i]!;
    const [u, v] = to[i]!;
    A.push([x, y, 1, 0, 0, 0, -u * x, -u * y, u]);
    A.push([0, 0, 0, x, y, 1, -v * x, -v * y, v]);
  }
  // Gauss-Jordan with partial pivoting on the 8x9 augmented matrix.
  for (let col = 0; col < 8; col++) {
    let pivot = col;
    for (let r = col + 1; r < 8; r++) if (Math.abs(A[r]![col]!) > Math.abs(A[pivot]![col]!)) pivot = r;
    [A[col], A[pivot]] = [A[pivot]!, A[col]!];
    const p = A[col]![col]!;
    for (let c = col; c < 9; c++) A[col]![c]! /= p;
    for (let r = 0; r < 8; r++) {
      if (r === col) continue;
      const f = A[r]![col]!;
      if (f === 0) continue;
      for (let c = col; c < 9; c++) A[r]![c]! -= f * A[col]![c]!;
    }
  }
  const h = A.map((row) => row[8]!);
  return [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!, h[6]!, h[7]!, 1];
}

/**
 * Output plane (width x height) sampled from `luma` through `toSource` (output pixel centre ->
 * source pixel coordinates, pixel centres at +0.5), bilinear, edge pixels repeated outside the
 * source.
 */
export function warpLuma(luma: LumaImage, toSource: Matrix3, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = toSource;
  const { data, width: sw, height: sh } = luma;
  const maxX = sw - 1;
  const maxY = sh - 1;
  for (let y = 0; y < height; y++) {
    // The homography's numerators and denominator are linear along a row: stepped, not recomputed.
    const py = y + 0.5;
    let nx = h0 * 0.5 + h1 * py + h2;
    let ny = h3 * 0.5 + h4 * py + h5;
    let d = h6 * 0.5 + h7 * py + h8;
    const row = y * width;
    for (let x = 0; x < width; x++, nx += h0, ny += h3, d += h6) {
      let sx = nx / d - 0.5;
      let sy = ny / d - 0.5;
      sx = sx < 0 ? 0 : sx > maxX ? maxX : sx;
      sy = sy < 0 ? 0 : sy > maxY ? maxY : sy;
      const x0 = sx | 0;
      const y0 = sy | 0;
      const x1 = x0 < maxX ? x0 + 1 : x0;
      const r0 = y0 * sw;
      const r1 = y0 < maxY ? r0 + sw : r0;
      const fx = sx - x0;
      const fy = sy - y0;
      const a = data[r0 + x0]!;
      const b = data[r1 + x0]!;
      const top = a + (data[r0 + x1]! - a) * fx;
      const bottom = b + (data[r1 + x1]! - b) * fx;
      out[row + x] = top + (bottom - top) * fy;
    }
  }
  return out;
}

/** A small 2D kernel as (dx, dy, weight) taps. */
interface Taps {
  readonly dx: Int32Array;
  readonly dy: Int32Array;
  readonly w: Float32Array;
}

/**
 * The motion blur of a hand that moved during the exposure: the mean of the plane shifted
 * along a streak of `length` px at `degrees`. Each shift is a constant sub-pixel offset, so
 * its bilinear weights are the same at every pixel: the streak is one fixed kernel of a few
 * taps. Returns a new plane (edges repeated); a streak under a quarter pixel returns `plane`.
 */
export function motionBlur(plane: Float32Array, width: number, height: number, length: number, degrees: number): Float32Array {
  if (length <= 0.25) return plane;
  return convolve(plane, width, height, streakTaps(length, degrees));
}

function streakTaps(length: number, degrees: number): Taps {
  const samples = Math.ceil(length) + 1;
  const a = (degrees * Math.PI) / 180;
  const weights = new Map<string, number>();
  const add = (x: number, y: number, w: number) => {
    if (w <= 0) return;
    const key = `${x},${y}`;
    weights.set(key, (weights.get(key) ?? 0) + w);
  };
  for (let k = 0; k < samples; k++) {
    const t = (k / (samples - 1) - 0.5) * length;
    const sx = t * Math.cos(a);
    const sy = t * Math.sin(a);
    const x0 = Math.floor(sx);
    const y0 = Math.floor(sy);
    const fx = sx - x0;
    const fy = sy - y0;
    add(x0, y0, ((1 - fx) * (1 - fy)) / samples);
    add(x0 + 1, y0, (fx * (1 - fy)) / samples);
    add(x0, y0 + 1, ((1 - fx) * fy) / samples);
    add(x0 + 1, y0 + 1, (fx * fy) / samples);
  }
  const entries = [...weights].map(([key, w]) => [...key.split(',').map(Number), w] as [number, number, number]);
  return { dx: Int32Array.from(entries, (e) => e[0]), dy: Int32Array.from(entries, (e) => e[1]), w: Float32Array.from(entries, (e) => e[2]) };
}

function convolve(plane: Float32Array, width: number, height: number, taps: Taps): Float32Array {
  const out = new Float32Array(width * height);
  const { dx, dy, w } = taps;
  const n = w.length;
  let reach = 0;
  for (let k = 0; k < n; k++) reach = Math.max(reach, Math.abs(dx[k]!), Math.abs(dy[k]!));
  const offsets = Int32Array.from({ length: n }, (_, k) => dy[k]! * width + dx[k]!);
  for (let y = 0; y < height; y++) {
    const inside = y >= reach && y < height - reach;
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      let s = 0;
      if (inside && x >= reach && x < width - reach) {
        for (let k = 0; k < n; k++) s += w[k]! * plane[i + offsets[k]!]!;
      } else {
        for (let k = 0; k < n; k++) {
          const xx = Math.min(width - 1, Math.max(0, x + dx[k]!));
          const yy = Math.min(height - 1, Math.max(0, y + dy[k]!));
          s += w[k]! * plane[yy * width + xx]!;
        }
      }
      out[i] = s;
    }
  }
  return out;
}

/** Separable Gaussian blur of a float plane in place (edges repeated); sigma <= 0 leaves it. */
export function gaussianBlur(plane: Float32Array, width: number, height: number, sigma: number): void {
  if (sigma <= 0) return;
  const radius = Math.max(1, Math.ceil(2.5 * sigma));
  const kernel = new Float32Array(2 * radius + 1);
  let total = 0;
  for (let i = -radius; i <= radius; i++) total += kernel[i + radius] = Math.exp(-(i * i) / (2 * sigma * sigma));
  for (let i = 0; i < kernel.length; i++) kernel[i]! /= total;
  // A line padded by `radius` repeated edge values on each side: the inner loop needs no clamps.
  const line = new Float32Array(Math.max(width, height) + 2 * radius);
  for (let y = 0; y < height; y++) convolveLine(plane, y * width, 1, width, kernel, radius, line);
  for (let x = 0; x < width; x++) convolveLine(plane, x, width, height, kernel, radius, line);
}

function convolveLine(plane: Float32Array, start: number, step: number, n: number, kernel: Float32Array, radius: number, line: Float32Array): void {
  const first = plane[start]!;
  const last = plane[start + (n - 1) * step]!;
  for (let i = 0; i < radius; i++) {
    line[i] = first;
    line[radius + n + i] = last;
  }
  for (let i = 0; i < n; i++) line[radius + i] = plane[start + i * step]!;
  const taps = kernel.length;
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let k = 0; k < taps; k++) s += kernel[k]! * line[i + k]!;
    plane[start + i * step] = s;
  }
}

/** Standard normal values to draw sensor noise from: Box-Muller per pixel measured ~3x the rest of the pass. */
const NORMALS = (() => {
  const random = mulberry32(0x9e3779b9);
  const out = new Float32Array(1 << 16);
  for (let i = 0; i < out.length; i += 2) {
    const r = Math.sqrt(-2 * Math.log(random() + 1e-12));
    const t = 2 * Math.PI * random();
    out[i] = r * Math.cos(t);
    out[i + 1] = r * Math.sin(t);
  }
  return out;
})();

export interface Exposure {
  /** Contrast factor around the frame's mean (1 = unchanged). */
  readonly contrast: number;
  /** Added to every level. */
  readonly brightness: number;
  /** Illumination falls linearly by this share across the frame, toward `lightDeg`. */
  readonly lightGradient: number;
  readonly lightDeg: number;
  /** Illumination at the frame's corners is lower by this share than at its centre (quadratic). */
  readonly vignette: number;
  /** Sensor noise, standard deviation in levels. */
  readonly noise: number;
}

/**
 * Light, exposure and sensor: each level times the illumination at its place (a gradient
 * across the frame and a vignette), pulled toward the frame's mean by `contrast`, shifted by
 * `brightness`, plus Gaussian noise, rounded to 8 bits.
 */
export function expose(plane: Float32Array, width: number, height: number, exposure: Exposure, random: () => number): LumaImage {
  let sum = 0;
  for (let i = 0; i < plane.length; i++) sum += plane[i]!;
  const mean = sum / plane.length;
  const { contrast, brightness, lightGradient, vignette, noise } = exposure;
  const a = (exposure.lightDeg * Math.PI) / 180;
  const cx = width / 2;
  const cy = height / 2;
  const half = Math.max(cx, cy);
  // Gradient: +g/2 on the lit side, -g/2 on the other, along the unit vector (ux, uy).
  const ux = Math.cos(a) / (2 * half);
  const uy = Math.sin(a) / (2 * half);
  const corner = cx * cx + cy * cy;
  const offset = mean * (1 - contrast) + brightness;
  const out = new Uint8Array(width * height);
  let state = (Math.floor(random() * 0xffffffff) | 1) >>> 0;
  for (let y = 0; y < height; y++) {
    const ry = y + 0.5 - cy;
    for (let x = 0; x < width; x++) {
      const rx = x + 0.5 - cx;
      const light = 1 - lightGradient * (rx * ux + ry * uy) - (vignette * (rx * rx + ry * ry)) / corner;
      // xorshift32 picks each pixel's normal from the table (seeded by the capture).
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      const n = NORMALS[state & 0xffff]!;
      const v = plane[y * width + x]! * light * contrast + offset + n * noise;
      out[y * width + x] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
    }
  }
  return rawImage(out, width, height, 1) as LumaImage;
}
