/**
 * An image scaled and shifted onto a canvas by exact area coverage: canvas pixel X shows the mean
 * of the source over [(X - offsetX) / scaleX, (X + 1 - offsetX) / scaleX) (and the same along y),
 * with the background where that interval leaves the source. Offsets and scales may be fractional,
 * which a plain resize cannot do: it is what puts a client's QR modules exactly on the canvas's
 * pixel grid (each source module edge lands on a canvas pixel edge, so modules stay crisp).
 * Downscaling averages (no aliasing); upscaling repeats pixels with their edges blended.
 */
import { rawImage, type RawImage } from './raw.ts';

export interface AreaTransform {
  /** Canvas pixels per source pixel along x and y. */
  readonly scaleX: number;
  readonly scaleY: number;
  /** Canvas position of the source's top-left corner (fractional). */
  readonly offsetX: number;
  readonly offsetY: number;
}

/** Per output pixel, the source pixels it covers and their shares, and the share off the source. */
interface Taps {
  readonly first: Int32Array;
  readonly count: Int32Array;
  /** Shares, `stride` per output pixel. */
  readonly shares: Float32Array;
  readonly stride: number;
  readonly outside: Float32Array;
}

function tapsFor(outSize: number, srcSize: number, scale: number, offset: number): Taps {
  const span = 1 / scale;
  const stride = Math.ceil(span) + 2;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const shares = new Float32Array(outSize * stride);
  const outside = new Float32Array(outSize);
  for (let j = 0; j < outSize; j++) {
    const a = (j - offset) / scale;
    const b = a + span;
    const from = Math.max(0, Math.floor(a));
    const to = Math.min(srcSize, Math.ceil(b));
    first[j] = from;
    let inside = 0;
    for (let i = from; i < to; i++) {
      const share = (Math.min(b, i + 1) - Math.max(a, i)) / span;
      shares[j * stride + i - from] = share;
      inside += share;
    }
    count[j] = Math.max(0, to - from);
    outside[j] = Math.max(0, 1 - inside);
  }
  return { first, count, shares, stride, outside };
}

/** `image` placed by `transform` on a canvas of the given size filled with `background` (one level for every channel). */
export function placeByArea(image: RawImage, canvas: { width: number; height: number }, transform: AreaTransform, background = 255): RawImage {
  const { scaleX, scaleY, offsetX, offsetY } = transform;
  if (!(scaleX > 0 && scaleY > 0) || !Number.isFinite(offsetX) || !Number.isFinite(offsetY)) throw new RangeError('scales must be positive and offsets finite');
  const { data, width, height, channels } = image;
  const xs = tapsFor(canvas.width, width, scaleX, offsetX);
  const ys = tapsFor(canvas.height, height, scaleY, offsetY);
  // Rows first: every source row the canvas's rows reach, resampled to the canvas's width.
  const rowLength = canvas.width * channels;
  const rows = new Float32Array(height * rowLength);
  const needed = new Uint8Array(height);
  for (let y = 0; y < canvas.height; y++) for (let k = 0; k < ys.count[y]!; k++) needed[ys.first[y]! + k] = 1;
  for (let sy = 0; sy < height; sy++) {
    if (!needed[sy]) continue;
    const src = sy * width * channels;
    const dst = sy * rowLength;
    for (let x = 0; x < canvas.width; x++) {
      const bg = xs.outside[x]! * background;
      for (let c = 0; c < channels; c++) {
        let v = bg;
        for (let k = 0; k < xs.count[x]!; k++) v += xs.shares[x * xs.stride + k]! * data[src + (xs.first[x]! + k) * channels + c]!;
        rows[dst + x * channels + c] = v;
      }
    }
  }
  const out = new Uint8Array(canvas.height * rowLength);
  for (let y = 0; y < canvas.height; y++) {
    const bg = ys.outside[y]! * background;
    const o = y * rowLength;
    for (let i = 0; i < rowLength; i++) {
      let v = bg;
      for (let k = 0; k < ys.count[y]!; k++) v += ys.shares[y * ys.stride + k]! * rows[(ys.first[y]! + k) * rowLength + i]!;
      out[o + i] = Math.min(255, Math.max(0, Math.round(v)));
    }
  }
  return rawImage(out, canvas.width, canvas.height, channels);
}

/** The image `factor` times larger, each pixel repeated as a factor x factor block (crisp edges kept exactly). */
export function upscaleNearest(image: RawImage, factor: number): RawImage {
  if (!Number.isInteger(factor) || factor < 1) throw new RangeError(`factor must be a positive integer, got ${factor}`);
  if (factor === 1) return image;
  const { width, height, channels, data } = image;
  const out = new Uint8Array(width * factor * height * factor * channels);
  const rowBytes = width * factor * channels;
  for (let y = 0; y < height; y++) {
    const row = y * factor * rowBytes;
    for (let x = 0; x < width; x++) {
      const from = (y * width + x) * channels;
      for (let r = 0; r < factor; r++) {
        for (let c = 0; c < channels; c++) out[row + (x * factor + r) * channels + c] = data[from + c]!;
      }
    }
    for (let r = 1; r < factor; r++) out.copyWithin(row + r * rowBytes, row, row + rowBytes);
  }
  return rawImage(out, width * factor, height * factor, channels);
}
