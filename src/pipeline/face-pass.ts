/**
 * The face pass (v5 `enhance: face`), an ADetailer-style refinement after generation.
 *
 * There is no face detector among the manifest's graphs, so it refines the centred square of
 * side FACE.region × the short side, where a portrait's face sits: that crop is upscaled to at
 * least the model's native size (tiled beyond it, as refinement is), run through img2img at FACE.strength with a face-detail prompt
 * and the matching crop of the QR control (so the code survives), then scaled back and pasted
 * with a feathered edge. Pixels outside the square are untouched. A face detector graph in the
 * manifest is the upgrade path: it would only change where the squares are.
 */
import { resizeImage } from '../image/decode.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import { applyPreset } from './prompts.ts';
import { GaussianStream } from './random.ts';
import { img2imgStartIndex } from './schedulers/index.ts';
import type { DiffusionModel } from './sessions.ts';
import { encodePrompts, StageClock } from './diffusion-parts.ts';
import { imageSeed, img2img, passWorkSide, type StageTimer, type Txt2ImgRequest } from './txt2img.ts';

export const FACE = Object.freeze({
  region: 0.5,
  strength: 0.35,
  prompt: 'detailed face, sharp eyes, natural skin texture',
  negative: 'deformed face, blurry face, asymmetric eyes',
  /** Feather width as a fraction of the square's side. */
  feather: 1 / 8,
});

export interface Square {
  readonly x: number;
  readonly y: number;
  readonly side: number;
}

export function faceSquare(width: number, height: number): Square {
  const side = Math.max(8, Math.round(FACE.region * Math.min(width, height)));
  return { x: Math.floor((width - side) / 2), y: Math.floor((height - side) / 2), side };
}

/** Denoising steps the face pass runs per image (0 when the model cannot run it: no VAE encoder). */
export function faceSteps(steps: number, target: DiffusionModel): number {
  if (!target.model.graphs.vae_encoder) return 0;
  return steps - img2imgStartIndex(steps, FACE.strength);
}

export interface FacePassHooks {
  /** After every denoising step. */
  readonly tick: () => void;
  /** Each finished image, as soon as it is pasted. */
  readonly onImage?: (index: number, image: RawImage) => void;
  readonly timer?: StageTimer;
}

/** The face pass over each image of a generation made from `request` (same seeds, control and settings). */
export async function enhanceFaces(images: readonly RawImage[], request: Txt2ImgRequest, target: DiffusionModel, hooks: FacePassHooks): Promise<RawImage[]> {
  const spec = target.model.spec;
  const timer: StageTimer = hooks.timer ?? new StageClock();
  const sq = faceSquare(request.width, request.height);
  const work = passWorkSide(spec, sq.side);

  const styled = applyPreset(request.preset, request.prompt, request.negativePrompt ?? '');
  const negative = [styled.negativePrompt, FACE.negative].filter(Boolean).join(', ');
  const text = await encodePrompts(target.model, `${styled.prompt}, ${FACE.prompt}`, negative, request.guidance > 1);

  // The control image's matching square (the control may be at another size than the output).
  const cx = request.control.width / request.width;
  const cy = request.control.height / request.height;
  const controlSquare = { x: Math.round(sq.x * cx), y: Math.round(sq.y * cy), side: Math.max(1, Math.round(sq.side * Math.min(cx, cy))) };
  const control = await resizeImage(crop(request.control, controlSquare), work, work, 'fill');

  const pass = { target, request, timer, text, tick: hooks.tick, stagePrefix: 'face_', nativeSize: request.nativeSize ?? spec.nativeSize } as const;
  const start = img2imgStartIndex(request.steps, FACE.strength);
  const out: RawImage[] = [];
  for (const [b, image] of images.entries()) {
    const patch = await resizeImage(crop(image, sq), work, work, 'fill');
    // A fresh stream per image, seeded like the image itself: the pass is reproducible on its own.
    const stream = new GaussianStream(imageSeed(request.seed, b));
    const refined = await img2img(pass, patch, control, start, (n) => stream.noise(n));
    const enhanced = pasteFeathered(image, await resizeImage(refined.image, sq.side, sq.side, 'fill'), sq);
    out.push(enhanced);
    hooks.onImage?.(b, enhanced);
  }
  return out;
}

function crop(image: RawImage, sq: Square): RawImage {
  const { channels, width } = image;
  const out = new Uint8Array(sq.side * sq.side * channels);
  const row = sq.side * channels;
  for (let y = 0; y < sq.side; y++) {
    const from = ((sq.y + y) * width + sq.x) * channels;
    out.set(image.data.subarray(from, from + row), y * row);
  }
  return rawImage(out, sq.side, sq.side, channels);
}

/** Blends `patch` (RGB, side × side) into `image` at the square, fully inside and fading over the feather. */
function pasteFeathered(image: RawImage, patch: RawImage, sq: Square): RawImage {
  const out = new Uint8Array(image.data);
  const feather = Math.max(1, Math.round(sq.side * FACE.feather));
  for (let y = 0; y < sq.side; y++) {
    const dy = Math.min(y, sq.side - 1 - y);
    for (let x = 0; x < sq.side; x++) {
      const w = Math.min(1, (Math.min(dy, x, sq.side - 1 - x) + 0.5) / feather);
      const o = ((sq.y + y) * image.width + sq.x + x) * 3;
      const s = (y * sq.side + x) * 3;
      for (let c = 0; c < 3; c++) out[o + c] = Math.round(w * patch.data[s + c]! + (1 - w) * image.data[o + c]!);
    }
  }
  return rawImage(out, image.width, image.height, 3);
}
