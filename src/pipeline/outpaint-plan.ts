/**
 * Outpainting geometry, decided before any model runs (so progress totals are known):
 *
 *  - output: the client's canvas, (w + left + right) × (h + top + bottom), exactly.
 *  - working canvas: where the model paints. A canvas up to maxPixels (5% slack) is painted at
 *    its own size, each side rounded UP to the model's multiple with the extra pixels on a padded
 *    side, cropped away at the end (the original is never resampled). A larger one is painted
 *    at maxPixels (aspect kept, sides rounded to the multiple) and resized to the exact output
 *    size at the end: a real SD1.5 UNet cannot attend over a ~9 MP latent.
 *  - passes: rectangles of the working canvas, each containing the previous one, the last one
 *    the whole canvas. one_shot paints the whole border in one pass. multi_shots grows the
 *    painted rectangle outward in P ≥ 2 passes, each extending every side by at most
 *    passFraction × nativeSize working pixels (maxPasses caps P; then passes are longer), so
 *    every pass paints a strip next to pixels it can see.
 */
import { frameFor } from './framing.ts';
import { containsRect, rectBottom, rectRight, type Rect, type Sides } from '../image/canvas.ts';

export interface Size {
  readonly width: number;
  readonly height: number;
}

export interface Padding {
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

export interface PlanOptions {
  readonly sizeMultiple: number;
  /** Largest working canvas area (5% slack) before painting at a reduced scale. */
  readonly maxPixels: number;
  /** 1 for one_shot; multi_shots: the longest extension of one pass and the most passes. */
  readonly multi?: { readonly passPixels: number; readonly maxPasses: number };
}

export interface OutpaintPlan {
  readonly output: Size;
  /** The original image in output pixels. */
  readonly original: Rect;
  /** Sides of the original with padding (where it meets new pixels). */
  readonly seams: Sides;
  readonly working: Size;
  /** How the working canvas maps back: 'crop' takes `outputInWorking` as it is; 'resize' scales it to the output. */
  readonly back: 'crop' | 'resize';
  /** The output rectangle inside the working canvas (at the output's size for 'crop', scaled for 'resize'). */
  readonly outputInWorking: Rect;
  /** The original image in working pixels. */
  readonly originalInWorking: Rect;
  /** Rectangles painted by each pass, in working pixels; each contains the previous; the last is the whole canvas. */
  readonly passes: readonly Rect[];
}

const ceilTo = (v: number, m: number): number => Math.max(m, Math.ceil(v / m) * m);
/** Pixels of one latent cell (the VAE's factor): the least a pass can paint. */
const LATENT_CELL = 8;

export function planOutpaint(image: Size, padding: Padding, options: PlanOptions): OutpaintPlan {
  const m = options.sizeMultiple;
  const output: Size = { width: image.width + padding.left + padding.right, height: image.height + padding.top + padding.bottom };
  const original: Rect = { x: padding.left, y: padding.top, width: image.width, height: image.height };
  const seams: Sides = { left: padding.left > 0, right: padding.right > 0, top: padding.top > 0, bottom: padding.bottom > 0 };
  const area = output.width * output.height;

  let working: Size;
  let back: OutpaintPlan['back'];
  let outputInWorking: Rect;
  let originalInWorking: Rect;
  /** Working pixels per output pixel. */
  let scale = 1;
  if (area <= options.maxPixels * 1.05) {
    working = { width: ceilTo(output.width, m), height: ceilTo(output.height, m) };
    // The rounding's extra pixels go where new pixels are painted anyway (the right/bottom unless only the left/top is padded).
    const ox = seams.left && !seams.right ? working.width - output.width : 0;
    const oy = seams.top && !seams.bottom ? working.height - output.height : 0;
    back = 'crop';
    outputInWorking = { x: ox, y: oy, ...output };
    originalInWorking = { x: ox + original.x, y: oy + original.y, width: image.width, height: image.height };
  } else {
    // Painted smaller, at exactly the output's aspect where such a size exists (framing.ts), else
    // with the output centred in the rounded canvas: scaled back uniformly, never stretched.
    const frame = frameFor(output, options.maxPixels, m);
    working = { width: frame.width, height: frame.height };
    const { content } = frame;
    const sx = content.width / output.width;
    const sy = content.height / output.height;
    scale = Math.max(sx, sy);
    // A padding thinner than the scale would round to nothing: the original would touch the
    // canvas's edge there and that side would never be painted (the border only the original's
    // edge, resampled). Each padded side keeps at least one latent cell to paint; the model sees
    // the original that much narrower, and the paste-back puts it at its exact place.
    const inset = (padded: boolean): number => (padded ? LATENT_CELL : 0);
    const x0 = content.x + Math.max(inset(seams.left), Math.round(original.x * sx));
    const y0 = content.y + Math.max(inset(seams.top), Math.round(original.y * sy));
    const x1 = Math.max(x0 + 1, content.x + Math.min(content.width - inset(seams.right), Math.round(rectRight(original) * sx)));
    const y1 = Math.max(y0 + 1, content.y + Math.min(content.height - inset(seams.bottom), Math.round(rectBottom(original) * sy)));
    back = 'resize';
    outputInWorking = content;
    originalInWorking = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
  }
  // The border asked for, in working pixels: the canvas's rounding may add up to 7 px to a side,
  // which is no reason for a second pass.
  const asked = Math.max(padding.left, padding.right, padding.top, padding.bottom) * scale;
  const passes = options.multi ? growthPasses(originalInWorking, working, m, options.multi, asked) : [{ x: 0, y: 0, ...working }];
  return { output, original, seams, working, back, outputInWorking, originalInWorking, passes };
}

/** multi_shots: P rectangles from the original outward (see the file comment). */
function growthPasses(original: Rect, working: Size, m: number, multi: { passPixels: number; maxPasses: number }, asked: number): Rect[] {
  const canvas: Rect = { x: 0, y: 0, ...working };
  const extents = {
    left: original.x,
    right: working.width - rectRight(original),
    top: original.y,
    bottom: working.height - rectBottom(original),
  };
  const longest = Math.max(extents.left, extents.right, extents.top, extents.bottom);
  // A border asked for of at most two latent rows cannot be split usefully (two passes of one row each).
  const count = ceilTo(asked, m) <= 2 * m ? 1 : Math.min(multi.maxPasses, Math.max(2, Math.ceil(longest / multi.passPixels)));
  const passes: Rect[] = [];
  let previous: Rect = original;
  for (let k = 1; k <= count; k++) {
    const e = (side: keyof typeof extents): number => Math.round((extents[side] * k) / count);
    let x0 = Math.min(original.x - e('left'), previous.x);
    let y0 = Math.min(original.y - e('top'), previous.y);
    let x1 = Math.max(rectRight(original) + e('right'), rectRight(previous));
    let y1 = Math.max(rectBottom(original) + e('bottom'), rectBottom(previous));
    // Whole latents: grow into the unpainted area (all of it lies outside the target), right/bottom first.
    [x0, x1] = growTo(x0, x1, working.width, m);
    [y0, y1] = growTo(y0, y1, working.height, m);
    const rect: Rect = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
    if (passes.length > 0 && rect.width === previous.width && rect.height === previous.height) continue;
    passes.push(rect);
    previous = rect;
  }
  const last = passes.at(-1);
  if (!last || last.width !== working.width || last.height !== working.height) passes.push(canvas);
  for (let i = 1; i < passes.length; i++) {
    if (!containsRect(passes[i]!, passes[i - 1]!)) throw new Error('outpaint plan: passes must grow');
  }
  return passes;
}

/** [a, b) grown to a multiple of m within [0, limit) (limit is a multiple of m, so it always fits). */
function growTo(a: number, b: number, limit: number, m: number): [number, number] {
  const need = ceilTo(b - a, m) - (b - a);
  const after = Math.min(need, limit - b);
  return [a - (need - after), b + after];
}
