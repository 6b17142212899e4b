/**
 * The code regeneration pass: the way people fix QR art by hand. Where the scan repair would
 * change modules, the code's square is run through img2img again with the ControlNet pushed
 * harder, and only the neighbourhood of those modules is taken from the result, so the art
 * elsewhere is untouched and the fixed modules are drawn by the model, not clamped.
 *
 *   1. the code's square of the image and of the control image, scaled to the work size (at least
 *      the model's native size, like the face pass)
 *   2. img2img from CODE_REGEN.strength with controlScale × CODE_REGEN.controlBoost, seeded like
 *      the image (the pass is reproducible on its own)
 *   3. the result scaled back and blended into the image through the caller's mask (1: take the
 *      regenerated pixel, 0: keep the image's)
 *
 * The caller decides where (qr/repair-mask.ts turns the repair's module mask into pixels) and
 * whether the pass is worth it: scripts/bench/scan-regen.ts measures it against the luminance
 * repair alone.
 */
import { cropImage } from '../image/canvas.ts';
import { resizeImage } from '../image/decode.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import { encodePrompts, StageClock } from './diffusion-parts.ts';
import { applyPreset } from './prompts.ts';
import { GaussianStream } from './random.ts';
import { img2imgStartIndex } from './schedulers/index.ts';
import type { DiffusionModel } from './sessions.ts';
import { imageSeed, img2img, passWorkSide, type StageTimer, type Txt2ImgRequest } from './txt2img.ts';

export const CODE_REGEN = Object.freeze({
  /** Share of the schedule re-run: enough for the model to redraw a module, not the scene. */
  strength: 0.45,
  /** The request's control scale times this, capped at maxControlScale. */
  controlBoost: 1.6,
  maxControlScale: 2.5,
});

export interface CodeSquare {
  readonly x: number;
  readonly y: number;
  readonly side: number;
}

export interface CodeRegenTarget {
  /** The image as generated (RGB, request.width × request.height). */
  readonly image: RawImage;
  /** Its index in the batch: the pass's noise is seeded like the image. */
  readonly index: number;
  /** Per pixel of `image`, 0..1: how much of the regenerated pixel to take. */
  readonly mask: Float32Array;
}

export interface CodeRegenOptions {
  readonly strength?: number;
  readonly controlBoost?: number;
  readonly timer?: StageTimer;
  readonly tick?: () => void;
}

/** Denoising steps the pass runs per image (0 when the model has no VAE encoder: no pass). */
export function codeRegenSteps(steps: number, target: DiffusionModel, strength: number = CODE_REGEN.strength): number {
  if (!target.model.graphs.vae_encoder) return 0;
  return steps - img2imgStartIndex(steps, strength);
}

/** The pass over each target of a generation made from `request`; images without a VAE encoder come back unchanged. */
export async function regenerateCode(targets: readonly CodeRegenTarget[], square: CodeSquare, request: Txt2ImgRequest, target: DiffusionModel, options: CodeRegenOptions = {}): Promise<RawImage[]> {
  if (!target.model.graphs.vae_encoder) return targets.map((t) => t.image);
  const spec = target.model.spec;
  const strength = options.strength ?? CODE_REGEN.strength;
  const controlScale = Math.min(CODE_REGEN.maxControlScale, request.controlScale * (options.controlBoost ?? CODE_REGEN.controlBoost));
  const work = passWorkSide(spec, square.side);
  const rect = { x: square.x, y: square.y, width: square.side, height: square.side };

  const styled = applyPreset(request.preset, request.prompt, request.negativePrompt ?? '');
  const text = await encodePrompts(target.model, styled.prompt, styled.negativePrompt, request.guidance > 1);
  const cx = request.control.width / request.width;
  const cy = request.control.height / request.height;
  const controlRect = { x: Math.round(square.x * cx), y: Math.round(square.y * cy), width: Math.round(square.side * cx), height: Math.round(square.side * cy) };
  const control = await resizeImage(cropImage(request.control, controlRect), work, work, 'fill');

  const pass = {
    target,
    request: { ...request, controlScale, controlStart: 0, controlEnd: 1 },
    timer: options.timer ?? new StageClock(),
    text,
    tick: options.tick ?? (() => {}),
    stagePrefix: 'code_',
    nativeSize: request.nativeSize ?? spec.nativeSize,
  } as const;
  const start = img2imgStartIndex(request.steps, strength);
  const out: RawImage[] = [];
  for (const t of targets) {
    const patch = await resizeImage(cropImage(t.image, rect), work, work, 'fill');
    const stream = new GaussianStream(imageSeed(request.seed, t.index) ^ 0x2c0de);
    const redrawn = await img2img(pass, patch, control, start, (n) => stream.noise(n));
    out.push(blendThroughMask(t.image, await resizeImage(redrawn.image, square.side, square.side, 'fill'), square, t.mask));
  }
  return out;
}

/** `patch` (RGB, side × side) placed at the square and mixed into `image` by the mask's weight per pixel. */
function blendThroughMask(image: RawImage, patch: RawImage, sq: CodeSquare, mask: Float32Array): RawImage {
  const out = new Uint8Array(image.data);
  for (let y = 0; y < sq.side; y++) {
    for (let x = 0; x < sq.side; x++) {
      const p = (sq.y + y) * image.width + sq.x + x;
      const w = mask[p]!;
      if (w <= 0) continue;
      const s = (y * sq.side + x) * 3;
      for (let c = 0; c < 3; c++) out[p * 3 + c] = Math.round(w * patch.data[s + c]! + (1 - w) * image.data[p * 3 + c]!);
    }
  }
  return rawImage(out, image.width, image.height, 3);
}
