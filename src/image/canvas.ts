/**
 * Pixel geometry for outpainting: rectangles, placing an image on a larger canvas, cropping, and
 * the feathered seam between kept and new pixels.
 *
 * The seam weight ("alpha": 1 = new pixel, 0 = kept pixel) falls smoothly from 1 at an open
 * edge of a kept rectangle to exactly 0 at `band` pixels inside it, so only the `band` pixels
 * nearest an open edge are ever blended and every pixel beyond them keeps its bytes. Edges that
 * touch nothing new (no padding on that side) are not open: pixels along them are kept as they are.
 */
import { rawImage, type RawImage } from './raw.ts';

export interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** Which sides of a kept rectangle meet new pixels. */
export interface Sides {
  readonly left: boolean;
  readonly right: boolean;
  readonly top: boolean;
  readonly bottom: boolean;
}

export const rectRight = (r: Rect): number => r.x + r.width;
export const rectBottom = (r: Rect): number => r.y + r.height;

export function containsRect(outer: Rect, inner: Rect): boolean {
  return inner.x >= outer.x && inner.y >= outer.y && rectRight(inner) <= rectRight(outer) && rectBottom(inner) <= rectBottom(outer);
}

/** Sides of `inner` that do not lie on the border of `outer` (there is room beyond them). */
export function openSides(inner: Rect, outer: Rect): Sides {
  return { left: inner.x > outer.x, right: rectRight(inner) < rectRight(outer), top: inner.y > outer.y, bottom: rectBottom(inner) < rectBottom(outer) };
}

/** 3-channel copy: grey is expanded, alpha dropped (callers flatten alpha before, as decodeImage does). */
export function toRgb(image: RawImage): RawImage {
  if (image.channels === 3) return image;
  const n = image.width * image.height;
  const out = new Uint8Array(n * 3);
  const c = image.channels;
  for (let p = 0; p < n; p++) {
    const s = p * c;
    out[p * 3] = image.data[s]!;
    out[p * 3 + 1] = image.data[c === 1 ? s : s + 1]!;
    out[p * 3 + 2] = image.data[c === 1 ? s : s + 2]!;
  }
  return rawImage(out, image.width, image.height, 3);
}

/** A width × height RGB canvas filled with `fill`, with `image` (RGB) copied at (x, y); the image must fit. */
export function placeOnCanvas(image: RawImage, width: number, height: number, x: number, y: number, fill: readonly [number, number, number] = [128, 128, 128]): RawImage {
  if (image.channels !== 3) throw new RangeError('placeOnCanvas: expected an RGB image');
  if (!containsRect({ x: 0, y: 0, width, height }, { x, y, width: image.width, height: image.height })) {
    throw new RangeError(`placeOnCanvas: ${image.width}x${image.height} at (${x}, ${y}) does not fit ${width}x${height}`);
  }
  const out = new Uint8Array(width * height * 3);
  for (let p = 0; p < width * height; p++) {
    out[p * 3] = fill[0];
    out[p * 3 + 1] = fill[1];
    out[p * 3 + 2] = fill[2];
  }
  const row = image.width * 3;
  for (let r = 0; r < image.height; r++) out.set(image.data.subarray(r * row, (r + 1) * row), ((y + r) * width + x) * 3);
  return rawImage(out, width, height, 3);
}

/** The pixels of `rect` (inside the image) as a new image. */
export function cropImage(image: RawImage, rect: Rect): RawImage {
  if (!containsRect({ x: 0, y: 0, width: image.width, height: image.height }, rect) || rect.width <= 0 || rect.height <= 0) {
    throw new RangeError(`cropImage: ${rect.width}x${rect.height} at (${rect.x}, ${rect.y}) is not inside ${image.width}x${image.height}`);
  }
  const c = image.channels;
  const out = new Uint8Array(rect.width * rect.height * c);
  const row = rect.width * c;
  for (let r = 0; r < rect.height; r++) {
    const from = ((rect.y + r) * image.width + rect.x) * c;
    out.set(image.data.subarray(from, from + row), r * row);
  }
  return rawImage(out, rect.width, rect.height, c);
}

/** 1 at distance 0 → 0 at `band` (smoothstep), for a pixel whose centre is `d` pixels from an open edge. */
export function seamRamp(d: number, band: number): number {
  if (band <= 0 || d >= band) return 0;
  if (d <= 0) return 1;
  const t = d / band;
  return 1 - t * t * (3 - 2 * t);
}

/**
 * Seam weight of pixel (px, py), which lies inside the kept rectangle `kept`, by its distance to
 * the nearest open side: 0 beyond `band` pixels, so those pixels stay byte for byte.
 */
export function seamAlpha(px: number, py: number, kept: Rect, open: Sides, band: number): number {
  let d = Infinity;
  if (open.left) d = Math.min(d, px - kept.x + 0.5);
  if (open.right) d = Math.min(d, rectRight(kept) - px - 0.5);
  if (open.top) d = Math.min(d, py - kept.y + 0.5);
  if (open.bottom) d = Math.min(d, rectBottom(kept) - py - 0.5);
  return seamRamp(d, band);
}

/**
 * `original` (RGB) pasted into a copy of `canvas` (RGB) at (x, y): bytes copied as they are,
 * except the `feather` pixels nearest each side in `seams`, which blend into the canvas
 * (alpha = seamAlpha; see the file comment). Cost: one row copy per row plus the band pixels.
 */
export function pasteWithFeather(canvas: RawImage, original: RawImage, x: number, y: number, seams: Sides, feather: number): RawImage {
  if (canvas.channels !== 3 || original.channels !== 3) throw new RangeError('pasteWithFeather: expected RGB images');
  const kept: Rect = { x, y, width: original.width, height: original.height };
  if (!containsRect({ x: 0, y: 0, width: canvas.width, height: canvas.height }, kept)) {
    throw new RangeError(`pasteWithFeather: ${original.width}x${original.height} at (${x}, ${y}) does not fit ${canvas.width}x${canvas.height}`);
  }
  const out = new Uint8Array(canvas.data);
  const W = canvas.width;
  const w = original.width;
  const band = Math.max(0, feather);
  const blendPixel = (cx: number, cy: number): void => {
    const a = seamAlpha(cx, cy, kept, seams, band);
    const o = (cy * W + cx) * 3;
    const s = ((cy - y) * w + (cx - x)) * 3;
    for (let c = 0; c < 3; c++) {
      const orig = original.data[s + c]!;
      out[o + c] = a === 0 ? orig : Math.round(a * canvas.data[o + c]! + (1 - a) * orig);
    }
  };
  for (let r = 0; r < original.height; r++) {
    const cy = y + r;
    out.set(original.data.subarray(r * w * 3, (r + 1) * w * 3), (cy * W + x) * 3);
    const nearRow = (seams.top && r < band) || (seams.bottom && original.height - r <= band);
    if (nearRow) {
      for (let cx = x; cx < x + w; cx++) blendPixel(cx, cy);
      continue;
    }
    const left = seams.left ? Math.min(band, w) : 0;
    const right = seams.right ? Math.min(band, w) : 0;
    for (let i = 0; i < left; i++) blendPixel(x + i, cy);
    for (let i = Math.max(left, w - right); i < w; i++) blendPixel(x + i, cy);
  }
  return rawImage(out, canvas.width, canvas.height, 3);
}
