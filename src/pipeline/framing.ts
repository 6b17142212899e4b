/**
 * Working canvases that keep the output's aspect ratio: the model works on sides that are
 * multiples of 8 (or the manifest's sizeMultiple) within an area budget, and the result must come
 * back at exactly the requested size without being stretched.
 *
 * A Frame is a working canvas plus the rectangle of it that stands for the output. Where a size
 * with exactly the output's aspect exists within the budget (every size of the spec's table has
 * one: 768×768, 1024×576, 1320×1760, ...), the content is the whole canvas and going back to the
 * output is a uniform resize. Otherwise (odd sizes such as 1000×999) the canvas is the rounded
 * size and the content is the centred rectangle of the output's aspect inside it: the margin
 * (under `multiple` pixels) is painted but cropped away, never squeezed in.
 */
import type { Rect } from '../image/canvas.ts';
import { cropResize, resizeExtend, resizeImage } from '../image/decode.ts';
import type { RawImage } from '../image/raw.ts';

export interface Size {
  readonly width: number;
  readonly height: number;
}

export interface Frame extends Size {
  /** Where the output lies in the canvas (the whole canvas when the aspect is exact). */
  readonly content: Rect;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/** The exact-aspect size is used when it keeps at least this share of the budgeted area. */
const EXACT_MIN_SHARE = 0.85;

/**
 * The working frame for `output` within `maxArea` pixels, sides multiples of `multiple`:
 * the output's own size when it fits (and is a multiple), else the largest exact-aspect size that
 * fits, else the rounded size with the output centred inside it.
 */
export function frameFor(output: Size, maxArea: number, multiple = 8): Frame {
  const { width: W, height: H } = output;
  if (!(Number.isInteger(W) && Number.isInteger(H) && W > 0 && H > 0)) throw new RangeError(`frame of ${W}x${H}: sides must be positive integers`);
  const scale = Math.min(1, Math.sqrt(maxArea / (W * H)));
  const budget = W * H * scale * scale;
  // Exact aspect: (a·k) × (b·k) with a:b the reduced ratio and both sides multiples of `multiple`.
  const g = gcd(W, H);
  const a = W / g;
  const b = H / g;
  const unit = lcm(multiple / gcd(a, multiple), multiple / gcd(b, multiple));
  const k = Math.floor(Math.min(g, Math.sqrt(maxArea / (a * b))) / unit) * unit;
  if (k > 0 && a * b * k * k >= EXACT_MIN_SHARE * budget) {
    const size = { width: a * k, height: b * k };
    return { ...size, content: { x: 0, y: 0, ...size } };
  }
  const round = (v: number): number => Math.max(multiple, Math.round(v / multiple) * multiple);
  const canvas = { width: round(W * scale), height: round(H * scale) };
  return { ...canvas, content: centredContent(output, canvas) };
}

/** The largest rectangle of `output`'s aspect centred in `canvas` (whole pixels). */
export function centredContent(output: Size, canvas: Size): Rect {
  const s = Math.min(canvas.width / output.width, canvas.height / output.height);
  const width = Math.min(canvas.width, Math.max(1, Math.round(output.width * s)));
  const height = Math.min(canvas.height, Math.max(1, Math.round(output.height * s)));
  return { x: Math.floor((canvas.width - width) / 2), y: Math.floor((canvas.height - height) / 2), width, height };
}

/** True when the frame's content is the whole canvas. */
export const isExact = (f: Frame): boolean => f.content.width === f.width && f.content.height === f.height;

/** A frame's content taken out and resized to `size` (uniform up to rounding: same aspect). */
export async function fromFrame(image: RawImage, frame: Frame, size: Size): Promise<RawImage> {
  if (image.width !== frame.width || image.height !== frame.height) throw new RangeError(`fromFrame: image ${image.width}x${image.height} is not the frame's ${frame.width}x${frame.height}`);
  if (isExact(frame)) return image.width === size.width && image.height === size.height ? image : resizeImage(image, size.width, size.height, 'fill');
  return cropResize(image, frame.content, size.width, size.height);
}

/**
 * An image of the output's aspect (the control image, or an earlier pass's content) put into a
 * frame: resized to the content rectangle, the margin filled by repeating the edge pixels.
 */
export async function intoFrame(image: RawImage, frame: Frame): Promise<RawImage> {
  const { x, y, width, height } = frame.content;
  if (isExact(frame)) return image.width === width && image.height === height ? image : resizeImage(image, width, height, 'fill');
  return resizeExtend(image, width, height, { left: x, top: y, right: frame.width - width - x, bottom: frame.height - height - y });
}

/** Moves a frame's content into another frame (e.g. generation → refinement canvas). */
export async function reframe(image: RawImage, from: Frame, to: Frame): Promise<RawImage> {
  return intoFrame(await fromFrame(image, from, to.content), to);
}
