/**
 * The face pass (v5 `enhance: face`), an ADetailer-style refinement after generation.
 *
 * The model's face_detector graph (face-detect.ts) finds the faces of each image; up to the
 * manifest's faceDetector.maxFaces, largest first, each face's box is grown to a square with
 * FACE.margin of its long side on every side (as ADetailer pads its crop) and kept inside the
 * image. Each square is upscaled to at least the model's native size (tiled beyond it, as
 * refinement is), run through img2img at FACE.strength with a face-detail prompt and the
 * matching crop of the QR control (so the code survives), then scaled back and pasted with a
 * feathered edge. Pixels outside the squares are untouched; an image without faces is returned
 * as it was and costs no denoising steps. The scan check and repair run on the result.
 *
 * Reproducible per seed: one noise stream per image, seeded like the image, feeds its faces in
 * order (largest first, ties by position).
 */
import { resizeImage } from '../image/decode.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import { detectFaces, type FaceBox } from './face-detect.ts';
import { applyPreset } from './prompts.ts';
import { GaussianStream } from './random.ts';
import { img2imgStartIndex } from './schedulers/index.ts';
import type { DiffusionModel } from './sessions.ts';
import type { TextConditioning } from './denoisers.ts';
import { encodePrompts, StageClock } from './diffusion-parts.ts';
import { imageSeed, img2img, passWorkSide, type StageTimer, type Txt2ImgRequest } from './txt2img.ts';

export const FACE = Object.freeze({
  strength: 0.35,
  prompt: 'detailed face, sharp eyes, natural skin texture',
  negative: 'deformed face, blurry face, asymmetric eyes',
  /** Context around a face: this fraction of the box's long side on every side of the square. */
  margin: 0.25,
  /** Smallest square refined, in pixels. */
  minSide: 8,
  /** Feather width as a fraction of the square's side. */
  feather: 1 / 8,
});

export interface Square {
  readonly x: number;
  readonly y: number;
  readonly side: number;
}

/** The square refined around `box`: its long side plus the margin, centred on it, moved and clipped to fit the image. */
export function faceSquare(box: Pick<FaceBox, 'x1' | 'y1' | 'x2' | 'y2'>, width: number, height: number): Square {
  const long = Math.max(box.x2 - box.x1, box.y2 - box.y1);
  const side = Math.min(width, height, Math.max(FACE.minSide, Math.round(long * (1 + 2 * FACE.margin))));
  const place = (centre: number, size: number): number => Math.min(size - side, Math.max(0, Math.round(centre - side / 2)));
  return { x: place((box.x1 + box.x2) / 2, width), y: place((box.y1 + box.y2) / 2, height), side };
}

/** Why the target cannot run the face pass, or undefined when it can. */
export function facePassBlocker(target: DiffusionModel): string | undefined {
  if (!target.model.graphs.face_detector) return 'enhance=face needs a face_detector graph; skipped';
  if (!target.model.graphs.vae_encoder) return 'enhance=face needs a vae_encoder graph; skipped';
  return undefined;
}

/** Denoising steps the face pass runs per face (0 when the model cannot run it: no detector or VAE encoder). */
export function faceSteps(steps: number, target: DiffusionModel): number {
  if (facePassBlocker(target)) return 0;
  return steps - img2imgStartIndex(steps, FACE.strength);
}

/** The squares to refine in each image, largest face first (none for a model that cannot run the pass). */
export async function findFaceSquares(images: readonly RawImage[], target: DiffusionModel): Promise<Square[][]> {
  const detector = target.model.graphs.face_detector;
  if (!detector || facePassBlocker(target)) return images.map(() => []);
  const out: Square[][] = [];
  for (const image of images) {
    const faces = await detectFaces(image, detector, target.model.spec.faceDetector);
    const squares = faces.map((box) => faceSquare(box, image.width, image.height));
    out.push(squares.sort((a, b) => b.side - a.side || a.y - b.y || a.x - b.x));
  }
  return out;
}

export interface FacePassHooks {
  /** After every denoising step. */
  readonly tick: () => void;
  /** Each finished image (in order; an image without faces as soon as its turn comes). */
  readonly onImage?: (index: number, image: RawImage) => void;
  readonly timer?: StageTimer;
}

/** The face pass over each image of a generation made from `request` (same seeds, control and settings), at `squares` (findFaceSquares). */
export async function enhanceFaces(
  images: readonly RawImage[],
  squares: readonly (readonly Square[])[],
  request: Txt2ImgRequest,
  target: DiffusionModel,
  hooks: FacePassHooks,
): Promise<RawImage[]> {
  const spec = target.model.spec;
  const timer: StageTimer = hooks.timer ?? new StageClock();
  const any = squares.some((s) => s.length > 0);
  // No face anywhere: not even the prompts are encoded.
  const text = any ? await faceText(request, target) : undefined;
  const pass = text && ({ target, request, timer, text, tick: hooks.tick, stagePrefix: 'face_', nativeSize: request.nativeSize ?? spec.nativeSize } as const);
  const start = img2imgStartIndex(request.steps, FACE.strength);
  // The control image may be at another size than the output.
  const cx = request.control.width / request.width;
  const cy = request.control.height / request.height;
  const out: RawImage[] = [];
  for (const [b, original] of images.entries()) {
    let image = original;
    // A fresh stream per image, seeded like the image itself: the pass is reproducible on its own.
    const stream = new GaussianStream(imageSeed(request.seed, b));
    for (const sq of squares[b] ?? []) {
      const work = passWorkSide(spec, sq.side);
      const controlSquare = { x: Math.round(sq.x * cx), y: Math.round(sq.y * cy), side: Math.max(1, Math.round(sq.side * Math.min(cx, cy))) };
      const control = await resizeImage(crop(request.control, controlSquare), work, work, 'fill');
      const patch = await resizeImage(crop(image, sq), work, work, 'fill');
      const refined = await img2img(pass!, patch, control, start, (n) => stream.noise(n));
      image = pasteFeathered(image, await resizeImage(refined.image, sq.side, sq.side, 'fill'), sq);
    }
    out.push(image);
    hooks.onImage?.(b, image);
  }
  return out;
}

async function faceText(request: Txt2ImgRequest, target: DiffusionModel): Promise<TextConditioning> {
  const { prompt, negativePrompt } = facePrompts(request);
  return encodePrompts(target.model, prompt, negativePrompt, request.guidance > 1);
}

/**
 * The face pass's texts: its own words first, then the request's (with its preset's). CLIP reads
 * 75 tokens; placed after a long prompt and a preset's words, the face words would be cut and the
 * paid pass would run without them.
 */
export function facePrompts(request: Pick<Txt2ImgRequest, 'prompt' | 'negativePrompt' | 'preset'>): { prompt: string; negativePrompt: string } {
  const styled = applyPreset(request.preset, request.prompt, request.negativePrompt ?? '');
  return {
    prompt: [FACE.prompt, styled.prompt].filter(Boolean).join(', '),
    negativePrompt: [FACE.negative, styled.negativePrompt].filter(Boolean).join(', '),
  };
}

function crop(image: RawImage, sq: Square): RawImage {
  const { channels, width } = image;
  const side = Math.min(sq.side, image.width - sq.x, image.height - sq.y);
  const out = new Uint8Array(side * side * channels);
  const row = side * channels;
  for (let y = 0; y < side; y++) {
    const from = ((sq.y + y) * width + sq.x) * channels;
    out.set(image.data.subarray(from, from + row), y * row);
  }
  return rawImage(out, side, side, channels);
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
