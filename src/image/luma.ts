/**
 * Small pure functions on luminance (1-channel) images: the form the scan check works in.
 * Everything is integer arithmetic on Uint8Array so a 4K frame stays within a few tens of ms.
 */
import { rawImage, type RawImage } from './raw.ts';

/** A RawImage with one channel. */
export type LumaImage = RawImage & { readonly channels: 1 };

// BT.601 weights in 10-bit fixed point (the ones ZXing uses): grey R=G=B maps to itself.
export const WR = 306;
export const WG = 601;
export const WB = 117;

/**
 * Luminance of any RawImage. 1-channel input is returned as is (no copy). RGBA is composited
 * over white first: transparent pixels of a QR PNG often hold black RGB, and a phone sees the
 * white page or screen behind them, not that black.
 */
export function toLuma(image: RawImage): LumaImage {
  const { data, width, height, channels } = image;
  if (channels === 1) return image as LumaImage;
  const out = new Uint8Array(width * height);
  lumaRow(data, 0, channels, out, width * height);
  return rawImage(out, width, height, 1) as LumaImage;
}

/** Luminance of `count` RGB or RGBA pixels starting at byte `from` into out[0..count). */
function lumaRow(data: Uint8Array, from: number, channels: 3 | 4, out: Uint8Array, count: number): void {
  // One small loop per layout: a function holding both loops measured 2x slower.
  if (channels === 3) lumaRgb(data, from, out, count);
  else lumaRgba(data, from, out, count);
}

function lumaRgb(data: Uint8Array, from: number, out: Uint8Array, count: number): void {
  for (let i = 0, s = from; i < count; i++, s += 3) out[i] = (WR * data[s]! + WG * data[s + 1]! + WB * data[s + 2]! + 512) >> 10;
}

function lumaRgba(data: Uint8Array, from: number, out: Uint8Array, count: number): void {
  for (let i = 0, s = from; i < count; i++, s += 4) {
    const y = (WR * data[s]! + WG * data[s + 1]! + WB * data[s + 2]! + 512) >> 10;
    const a = data[s + 3]!;
    out[i] = a === 255 ? y : ((y * a + 255 * (255 - a) + 127) / 255) | 0;
  }
}

/** Grey RGBA (what jsQR takes) from a luminance image. */
export function lumaToRgba(luma: LumaImage): Uint8ClampedArray {
  const src = luma.data;
  const out = new Uint8ClampedArray(src.length * 4);
  // One 32-bit store per pixel: 0xAARRGGBB on little-endian is bytes R,G,B,A = y,y,y,255.
  const words = new Uint32Array(out.buffer);
  for (let i = 0; i < src.length; i++) words[i] = 0xff000000 | (src[i]! * 0x010101);
  return out;
}

/**
 * Area averaging along one axis: output cell j covers source [j*f, (j+1)*f) with f =
 * src/dst. Its first and last source pixels may be partly covered; the ones between count
 * fully, so the hot loop is a plain integer sum. Covers are in 1/256ths.
 */
interface AxisPlan {
  first: Int32Array; // first source index of cell j
  last: Int32Array; // last source index of cell j (>= first)
  firstCover: Int32Array; // covered part of the first pixel, 0..256 (the whole cell when last === first)
  lastCover: Int32Array; // covered part of the last pixel, 0..256
  factor: number;
}

function planAxis(src: number, dst: number): AxisPlan {
  const f = src / dst;
  const plan: AxisPlan = { first: new Int32Array(dst), last: new Int32Array(dst), firstCover: new Int32Array(dst), lastCover: new Int32Array(dst), factor: f };
  for (let j = 0; j < dst; j++) {
    // Snapping within 1e-9 keeps integer factors free of float dust.
    const a = snap(j * f);
    const b = j === dst - 1 ? src : snap((j + 1) * f);
    const first = Math.floor(a);
    const last = Math.max(first, Math.ceil(b) - 1);
    plan.first[j] = first;
    plan.last[j] = last;
    plan.firstCover[j] = Math.round((Math.min(b, first + 1) - a) * 256);
    plan.lastCover[j] = Math.round((b - last) * 256);
  }
  return plan;
}

function snap(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - r) < 1e-9 ? r : x;
}

/**
 * Area-average downscale to outWidth x outHeight (each at most the source size): every
 * output pixel is the mean luminance of the source area it covers, which is also the
 * anti-aliasing a camera's optics and sensor give. Takes any channel count and converts one
 * source row at a time, so a 4K RGB frame is read once with no full-size grey copy.
 * Separable, columns first: the source rows of an output row are summed into one integer
 * row (a tight loop over every source pixel), then that row is reduced cell by cell (the
 * per-cell work then runs on output rows only; measured ~1.3x faster than rows first).
 */
export function downscaleArea(image: RawImage, outWidth: number, outHeight: number): LumaImage {
  const { data, width, height, channels } = image;
  if (!Number.isInteger(outWidth) || !Number.isInteger(outHeight) || outWidth < 1 || outHeight < 1 || outWidth > width || outHeight > height) {
    throw new RangeError(`cannot area-downscale ${width}x${height} to ${outWidth}x${outHeight}`);
  }
  if (outWidth === width && outHeight === height) return toLuma(image);
  const px = planAxis(width, outWidth);
  const py = planAxis(height, outHeight);
  const out = new Uint8Array(outWidth * outHeight);
  // acc[x] = sum of 256 * covered rows * luminance: <= 255 * 256 * (rows per cell + 1).
  const acc = new Int32Array(width);
  const add = channels === 1 ? addRow : channels === 3 ? addRgbRow : addRgbaRow;
  const stride = width * channels;
  const scale = 1 / (px.factor * py.factor * 65536);
  for (let i = 0; i < outHeight; i++) {
    const a = py.first[i]!;
    const b = py.last[i]!;
    add(acc, data, a * stride, py.firstCover[i]!, true);
    for (let y = a + 1; y < b; y++) add(acc, data, y * stride, 256, false);
    if (b !== a) add(acc, data, b * stride, py.lastCover[i]!, false);
    reduceRow(acc, px, out, i * outWidth, scale);
  }
  return rawImage(out, outWidth, outHeight, 1) as LumaImage;
}

// The hot loops live in small functions: V8 optimises each as a whole instead of
// on-stack-replacing one big function that deoptimises at call sites it has not seen yet.

function addRow(acc: Int32Array, src: Uint8Array, from: number, weight: number, reset: boolean): void {
  const n = acc.length;
  if (reset) for (let x = 0; x < n; x++) acc[x] = src[from + x]! * weight;
  else for (let x = 0; x < n; x++) acc[x]! += src[from + x]! * weight;
}

// Colour rows are converted to luminance inside the accumulation: no grey row is stored.
function addRgbRow(acc: Int32Array, src: Uint8Array, from: number, weight: number, reset: boolean): void {
  const n = acc.length;
  if (reset) {
    for (let x = 0, s = from; x < n; x++, s += 3) acc[x] = ((WR * src[s]! + WG * src[s + 1]! + WB * src[s + 2]! + 512) >> 10) * weight;
  } else {
    for (let x = 0, s = from; x < n; x++, s += 3) acc[x] = acc[x]! + ((WR * src[s]! + WG * src[s + 1]! + WB * src[s + 2]! + 512) >> 10) * weight;
  }
}

function addRgbaRow(acc: Int32Array, src: Uint8Array, from: number, weight: number, reset: boolean): void {
  const n = acc.length;
  for (let x = 0, s = from; x < n; x++, s += 4) {
    const y = (WR * src[s]! + WG * src[s + 1]! + WB * src[s + 2]! + 512) >> 10;
    const a = src[s + 3]!;
    const v = (a === 255 ? y : ((y * a + 255 * (255 - a) + 127) / 255) | 0) * weight;
    acc[x] = reset ? v : acc[x]! + v;
  }
}

/** Cells of one summed row into output pixels (sums in doubles: they can pass 2^31). */
function reduceRow(acc: Int32Array, plan: AxisPlan, out: Uint8Array, to: number, scale: number): void {
  const { first, last, firstCover, lastCover } = plan;
  const cells = first.length;
  for (let j = 0; j < cells; j++) {
    const a = first[j]!;
    const b = last[j]!;
    let sum = acc[a]! * firstCover[j]!;
    if (b !== a) {
      let inner = 0;
      for (let k = a + 1; k < b; k++) inner += acc[k]!;
      sum += inner * 256 + acc[b]! * lastCover[j]!;
    }
    const v = (sum * scale + 0.5) | 0;
    out[to + j] = v > 255 ? 255 : v;
  }
}

/**
 * Light separable blur with the binomial kernel [1 2 1]/4 (a gaussian of sigma ~0.7 px);
 * edges repeat the border pixel. Softens the texture of artistic codes inside modules.
 */
export function blur3(luma: LumaImage): LumaImage {
  const { data, width, height } = luma;
  const mid = new Uint16Array(width * height);
  for (let y = 0; y < height; y++) blurRow(data, mid, y * width, width);
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const up = (y > 0 ? y - 1 : 0) * width;
    const dn = (y < height - 1 ? y + 1 : y) * width;
    blurColumn(mid, out, up, y * width, dn, width);
  }
  return rawImage(out, width, height, 1) as LumaImage;
}

/** [1 2 1] along one row into mid (sum x4), border pixels repeated. */
function blurRow(src: Uint8Array, mid: Uint16Array, r: number, width: number): void {
  if (width === 1) {
    mid[r] = src[r]! * 4;
    return;
  }
  mid[r] = 3 * src[r]! + src[r + 1]!;
  const end = r + width - 1;
  for (let i = r + 1; i < end; i++) mid[i] = src[i - 1]! + 2 * src[i]! + src[i + 1]!;
  mid[end] = src[end - 1]! + 3 * src[end]!;
}

/** [1 2 1] down the columns of three mid rows into one output row, rounded. */
function blurColumn(mid: Uint16Array, out: Uint8Array, up: number, r: number, dn: number, width: number): void {
  for (let x = 0; x < width; x++) out[r + x] = (mid[up + x]! + 2 * mid[r + x]! + mid[dn + x]! + 8) >> 4;
}
