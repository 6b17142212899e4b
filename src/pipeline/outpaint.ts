/**
 * Outpainting: extend an image beyond its borders with the model's 9-channel inpainting UNet
 * (diffusers' StableDiffusionInpaintPipeline layout: latents(4) ‖ mask(1) ‖ masked-image
 * latents(4)), returning exactly (w + left + right) × (h + top + bottom) pixels in which the
 * original is byte-identical except a thin feathered seam.
 *
 * One run:
 *   1. Prompt: the request's, or the captioner's description of the image (returned as `caption`).
 *   2. Plan (outpaint-plan.ts): the working canvas (the output rounded up to the model's multiple,
 *      or scaled down to maxPixels when larger) and the passes (one_shot: one; multi_shots: the
 *      painted rectangle grows outward in several passes, each at most a fraction of the native size).
 *   3. Text: [negative ‖ prompt] in one text-encoder call; CFG runs both halves as one batch of 2.
 *   4. Each pass, on its rectangle of the working canvas:
 *        alpha per pixel: 1 where nothing is painted yet; inside what is kept, a smoothstep from 1
 *        at the open edge to 0 at `feather` (the original) or `overlap` (the previous pass's ring)
 *        pixels in, so the model repaints the seam and it blends;
 *        latent mask: 1 for every 8×8 cell with any alpha > 0 (binary, as the UNet was trained);
 *        masked image: the rectangle with masked cells set to 0 (grey), VAE-encoded (mean);
 *        denoise from pure noise (strength 1, seeded stream shared by the passes), decode, and
 *        composite with alpha into the working canvas.
 *   5. Back to the output: crop the rounding away (or resize when painted scaled down), then
 *      paste the original's bytes over it, feathered only on padded sides.
 *   6. NSFW check of the output by the model's checker (nsfw.ts), when it has one.
 */
import { cropImage, openSides, pasteWithFeather, placeOnCanvas, rectBottom, rectRight, seamRamp, toRgb, type Rect, type Sides } from '../image/canvas.ts';
import { cropResize, resizeImage } from '../image/decode.ts';
import type { RawImage } from '../image/raw.ts';
import { catalogue, OUTPAINTING_TYPES, type OutpaintingType } from '../workflows/catalogue.ts';
import { captionImage } from './captioner.ts';
import { guide } from './denoisers.ts';
import { encodePrompts, StageClock, vaeDecode, vaeEncode } from './diffusion-parts.ts';
import type { OutpaintingSettings } from './manifest.ts';
import { detectNsfw } from './nsfw.ts';
import { planOutpaint, type OutpaintPlan, type Padding, type Size } from './outpaint-plan.ts';
import { checkSeed, GaussianStream } from './random.ts';
import { createScheduler, type SchedulerName } from './schedulers/index.ts';
import type { OutpaintModel } from './sessions.ts';
import { floatTensor, packRgbPlanar, toFloat32 } from './tensors.ts';

export type { OutpaintPlan, Padding } from './outpaint-plan.ts';

export interface OutpaintRequest {
  /** Already fetched and resized to image_width × image_height (RGB; grey is expanded, alpha dropped). */
  readonly image: RawImage;
  /** Pixels to add on each side. */
  readonly padding: Padding;
  readonly type: OutpaintingType;
  /** Absent or blank: the captioner describes the image and that text is the prompt. */
  readonly prompt?: string;
  readonly negativePrompt?: string;
  readonly seed: number;
  /** Overrides of the manifest's workflows.outpainting settings (tests, quick demo runs, the bench). */
  readonly tuning?: OutpaintTuning;
}

export interface OutpaintTuning {
  /** Steps per pass (both types). */
  readonly steps?: number;
  readonly guidance?: number;
  readonly scheduler?: SchedulerName;
  readonly maxPixels?: number;
  /** multi_shots: longest extension of one pass, in working pixels. */
  readonly passPixels?: number;
  readonly maxPasses?: number;
  readonly featherPixels?: number;
  readonly overlapPixels?: number;
}

export type OutpaintStage =
  | 'caption'
  | 'tokenize_text_encoder'
  | 'canvas'
  | 'mask'
  | 'vae_encode'
  | 'unet'
  | 'scheduler'
  | 'vae_decode'
  | 'composite'
  | 'to_output'
  | 'paste'
  | 'nsfw'
  | 'total';

export interface OutpaintResult {
  /** RGB, exactly (w + left + right) × (h + top + bottom). */
  readonly image: RawImage;
  /** The captioner's text when the request had no prompt (it was used as the prompt). */
  readonly caption?: string;
  /** The prompt the model was given. */
  readonly prompt: string;
  /** Milliseconds per stage (absent stages did not run). */
  readonly timings: Partial<Record<OutpaintStage, number>>;
  readonly passes: number;
  /** Denoising steps of each pass. */
  readonly steps: number;
  /** The canvas the model painted (the output rounded up, or scaled down). */
  readonly working: Size;
  /** The NSFW checker's verdict; undefined when the model has none. */
  readonly nsfw?: boolean;
}

export type OutpaintProgress = (step: number, total: number) => void;

/** Request checks the API has already made (validate.ts, catalogue bounds), repeated for direct callers. */
export function checkOutpaintRequest(r: OutpaintRequest): void {
  const entry = catalogue.outpainting;
  if (entry.family !== 'outpainting') throw new Error('catalogue: outpainting entry has the wrong family');
  const { padding: range, canvas, imageWidth, imageHeight } = entry.params;
  checkSeed(r.seed);
  if (!OUTPAINTING_TYPES.includes(r.type)) throw new RangeError(`type must be one of ${OUTPAINTING_TYPES.join(', ')}, got ${String(r.type)}`);
  if (r.image.width < imageWidth.min || r.image.width > imageWidth.max || r.image.height < imageHeight.min || r.image.height > imageHeight.max) {
    throw new RangeError(`image must be ${imageWidth.min}..${imageWidth.max} x ${imageHeight.min}..${imageHeight.max} pixels, got ${r.image.width}x${r.image.height}`);
  }
  for (const side of ['left', 'right', 'top', 'bottom'] as const) {
    const v = r.padding[side];
    if (!Number.isInteger(v) || v < range.min || v > range.max) throw new RangeError(`padding ${side} must be an integer in [${range.min}, ${range.max}], got ${v}`);
  }
  const { left, right, top, bottom } = r.padding;
  if (left + right + top + bottom <= 0) throw new RangeError('at least one padding must be greater than 0');
  const w = r.image.width + left + right;
  const h = r.image.height + top + bottom;
  if (w > canvas.maxSide || h > canvas.maxSide || w * h > canvas.maxArea) {
    throw new RangeError(`the outpainted canvas would be ${w}x${h}; each side must be at most ${canvas.maxSide} pixels and the area at most ${canvas.maxArea} pixels`);
  }
}

/** Effective settings of one run: the manifest's, then the request's tuning. */
interface RunSettings {
  readonly steps: number;
  readonly guidance: number;
  readonly scheduler: SchedulerName;
  readonly maxPixels: number;
  readonly passPixels: number;
  readonly maxPasses: number;
  readonly featherPixels: number;
  readonly overlapPixels: number;
}

function runSettings(request: OutpaintRequest, target: OutpaintModel): RunSettings {
  const s: OutpaintingSettings = target.resolved.settings;
  const native = target.model.spec.nativeSize;
  const t = request.tuning ?? {};
  const multi = request.type === 'multi_shots';
  const out: RunSettings = {
    steps: t.steps ?? (multi ? s.multiShots.steps : s.steps),
    guidance: t.guidance ?? s.guidance,
    scheduler: t.scheduler ?? target.resolved.scheduler,
    maxPixels: t.maxPixels ?? s.maxPixels ?? native * native,
    passPixels: t.passPixels ?? Math.max(8, Math.round(s.multiShots.passFraction * native)),
    maxPasses: t.maxPasses ?? s.multiShots.maxPasses,
    featherPixels: t.featherPixels ?? s.featherPixels,
    overlapPixels: t.overlapPixels ?? s.overlapPixels,
  };
  if (!Number.isInteger(out.steps) || out.steps < 1 || out.steps > 500) throw new RangeError(`steps must be an integer in [1, 500], got ${out.steps}`);
  if (!(out.guidance >= 0)) throw new RangeError(`guidance must be >= 0, got ${out.guidance}`);
  if (!(out.maxPixels >= 64 * 64)) throw new RangeError(`maxPixels must be at least 4096, got ${out.maxPixels}`);
  if (!(out.passPixels >= 8) || !(Number.isInteger(out.maxPasses) && out.maxPasses >= 2)) throw new RangeError('passPixels must be >= 8 and maxPasses an integer >= 2');
  if (!(out.featherPixels >= 0) || !(out.overlapPixels >= 0)) throw new RangeError('featherPixels and overlapPixels must be >= 0');
  return out;
}

/** The plan a request will run (sizes and passes), without running it. */
export function outpaintPlan(request: OutpaintRequest, target: OutpaintModel): OutpaintPlan {
  const s = runSettings(request, target);
  return planOutpaint(request.image, request.padding, {
    sizeMultiple: target.model.spec.sizeMultiple,
    maxPixels: s.maxPixels,
    ...(request.type === 'multi_shots' ? { multi: { passPixels: s.passPixels, maxPasses: s.maxPasses } } : {}),
  });
}

/** Outpaints request.image; see the file comment for the method. */
export async function outpaint(request: OutpaintRequest, target: OutpaintModel, onProgress?: OutpaintProgress, signal?: AbortSignal): Promise<OutpaintResult> {
  checkOutpaintRequest(request);
  const started = performance.now();
  const clock = new StageClock<OutpaintStage>();
  const { model } = target;
  const settings = runSettings(request, target);
  const plan = outpaintPlan(request, target);
  const unet = model.graphs.unet_inpaint;
  if (!unet || !model.graphs.vae_encoder) throw new Error(`model '${model.id}' needs unet_inpaint and vae_encoder graphs to outpaint`);
  const totalSteps = settings.steps * plan.passes.length;
  let done = 0;
  signal?.throwIfAborted();
  const image = toRgb(request.image);

  // 1. Prompt.
  let prompt = request.prompt?.trim() ?? '';
  let caption: string | undefined;
  if (prompt === '') {
    caption = await clock.time('caption', () => captionImage(image, model, { ...captionOptions(target), ...(signal ? { signal } : {}) }));
    prompt = caption;
  }
  signal?.throwIfAborted();

  // 2. Working canvas: the original at its working place and size, the rest to be painted.
  const canvas = await clock.time('canvas', async () => {
    const o = plan.originalInWorking;
    const placed = o.width === image.width && o.height === image.height ? image : await resizeImage(image, o.width, o.height, 'fill');
    return placeOnCanvas(placed, plan.working.width, plan.working.height, o.x, o.y);
  });

  // 3. Text.
  const cfg = settings.guidance > 1;
  const text = await clock.time('tokenize_text_encoder', () => encodePrompts(model, prompt, request.negativePrompt ?? '', cfg, 'unet_inpaint'));
  const hidden = floatTensor(unet.floatType('encoder_hidden_states'), text.hidden, [text.rows, text.tokens, text.width]);
  const stream = new GaussianStream(request.seed);

  // 4. Passes.
  let painted: Rect = plan.originalInWorking;
  const workingRect: Rect = { x: 0, y: 0, ...plan.working };
  for (const rect of plan.passes) {
    const open = openSides(painted, workingRect);
    const mask = await clock.time('mask', () => passMask(canvas, rect, painted, plan.originalInWorking, open, settings, plan));
    const h = rect.height / 8;
    const w = rect.width / 8;
    const maskedLatents = await clock.time('vae_encode', () => vaeEncode(model, mask.maskedPlanes, rect.width, rect.height));
    const scheduler = createScheduler(settings.scheduler, settings.steps, target.resolved.schedulerConfig);
    const per = 4 * h * w;
    const plane = h * w;
    const rows = cfg ? 2 : 1;
    // The 5 conditioning channels are the same every step: lay out [latents ‖ mask ‖ masked latents] once per row.
    const modelIn = new Float32Array(rows * 9 * plane);
    for (let r = 0; r < rows; r++) {
      modelIn.set(mask.cells, (r * 9 + 4) * plane);
      modelIn.set(maskedLatents, (r * 9 + 5) * plane);
    }
    let latents = stream.noise(per);
    if (scheduler.initNoiseSigma !== 1) for (let k = 0; k < per; k++) latents[k]! *= scheduler.initNoiseSigma;
    for (let i = 0; i < scheduler.timesteps.length; i++) {
      const input = scheduler.scaleModelInput(latents, i);
      for (let r = 0; r < rows; r++) modelIn.set(input, r * 9 * plane);
      const t = scheduler.timesteps[i]!;
      const pred = await clock.time('unet', async () => {
        const out = await unet.run(
          { sample: floatTensor(unet.floatType('sample'), modelIn, [rows, 9, h, w]), timestep: unet.timestepTensor(t, rows), encoder_hidden_states: hidden },
          ['out_sample'],
        );
        return out.out_sample!;
      });
      latents = await clock.time('scheduler', () => {
        const floats = toFloat32(pred);
        const eps = cfg ? guide(floats, settings.guidance) : floats.subarray(0, per);
        return scheduler.step(eps, i, latents, (n) => stream.noise(n));
      });
      done++;
      onProgress?.(done, totalSteps);
      signal?.throwIfAborted();
    }
    const decoded = await clock.time('vae_decode', () => vaeDecode(model, latents, h, w));
    await clock.time('composite', () => compositeInto(canvas, decoded, rect, mask.alpha));
    painted = rect;
  }

  // 5. Back to the output size; the original's bytes on top.
  const generated = await clock.time('to_output', () =>
    plan.back === 'crop' ? cropImage(canvas, plan.outputInWorking) : cropResize(canvas, plan.outputInWorking, plan.output.width, plan.output.height),
  );
  const result = await clock.time('paste', () => pasteWithFeather(generated, image, plan.original.x, plan.original.y, plan.seams, settings.featherPixels));

  // 6. NSFW.
  let nsfw: boolean | undefined;
  const checker = model.nsfw;
  if (checker) nsfw = (await clock.time('nsfw', () => detectNsfw([result], checker)))[0];

  clock.timings.total = performance.now() - started;
  return {
    image: result,
    ...(caption !== undefined ? { caption } : {}),
    prompt,
    timings: clock.timings,
    passes: plan.passes.length,
    steps: settings.steps,
    working: plan.working,
    ...(nsfw !== undefined ? { nsfw } : {}),
  };
}

function captionOptions(target: OutpaintModel): { maxTokens?: number; beams?: number } {
  const s = target.resolved.settings;
  return { ...(s.captionMaxTokens !== undefined ? { maxTokens: s.captionMaxTokens } : {}), ...(s.captionBeams !== undefined ? { beams: s.captionBeams } : {}) };
}

interface PassMask {
  /** Per pixel of the pass rectangle: how much of the decoded pixel replaces the canvas. */
  readonly alpha: Float32Array;
  /** Per latent cell: 1 = repaint (the UNet's mask channel). */
  readonly cells: Float32Array;
  /** The rectangle as RGB planes in [-1,1] with repainted cells set to 0 (diffusers' masked_image). */
  readonly maskedPlanes: Float32Array;
}

/**
 * Alpha, latent mask and masked image of one pass over `rect` (see the file comment). `painted`
 * is what earlier passes (or the original) made; its sides in `open` meet unpainted pixels.
 */
function passMask(canvas: RawImage, rect: Rect, painted: Rect, original: Rect, open: Sides, s: RunSettings, plan: OutpaintPlan): PassMask {
  const W = rect.width;
  const H = rect.height;
  // The feather is in output pixels; in the working canvas it shrinks with the scale.
  const featherWorking = plan.back === 'crop' ? s.featherPixels : s.featherPixels * (plan.working.width / plan.output.width);
  // Distance of each column / row of the rectangle to the open sides of `painted` (Infinity: none).
  const axis = (n: number, start: number, lo: number, hi: number, openLo: boolean, openHi: boolean): Float64Array =>
    Float64Array.from({ length: n }, (_, i) => {
      const p = start + i;
      return Math.min(openLo ? p - lo + 0.5 : Infinity, openHi ? hi - p - 0.5 : Infinity);
    });
  const dx = axis(W, rect.x, painted.x, rectRight(painted), open.left, open.right);
  const dy = axis(H, rect.y, painted.y, rectBottom(painted), open.top, open.bottom);
  const alpha = new Float32Array(W * H);
  for (let y = 0; y < H; y++) {
    const py = rect.y + y;
    const rowPainted = py >= painted.y && py < rectBottom(painted);
    const rowOriginal = py >= original.y && py < rectBottom(original);
    for (let x = 0; x < W; x++) {
      const px = rect.x + x;
      if (!rowPainted || px < painted.x || px >= rectRight(painted)) {
        alpha[y * W + x] = 1;
        continue;
      }
      const inOriginal = rowOriginal && px >= original.x && px < rectRight(original);
      alpha[y * W + x] = seamRamp(Math.min(dx[x]!, dy[y]!), inOriginal ? featherWorking : s.overlapPixels);
    }
  }
  const w = W / 8;
  const cells = new Float32Array((H / 8) * w);
  for (let y = 0; y < H; y++) {
    const row = (y >> 3) * w;
    for (let x = 0; x < W; x++) if (alpha[y * W + x]! > 0) cells[row + (x >> 3)] = 1;
  }
  const maskedPlanes = new Float32Array(3 * W * H);
  packRgbPlanar(cropImage(canvas, rect), maskedPlanes, 0, 2, -1);
  const plane = W * H;
  for (let y = 0; y < H; y++) {
    const row = (y >> 3) * w;
    for (let x = 0; x < W; x++) {
      if (cells[row + (x >> 3)] === 0) continue;
      const p = y * W + x;
      maskedPlanes[p] = maskedPlanes[plane + p] = maskedPlanes[2 * plane + p] = 0;
    }
  }
  return { alpha, cells, maskedPlanes };
}

/** canvas[rect] = alpha·decoded + (1 − alpha)·canvas[rect], in place (alpha 0 leaves the bytes). */
function compositeInto(canvas: RawImage, decoded: RawImage, rect: Rect, alpha: Float32Array): void {
  const W = rect.width;
  const data = canvas.data;
  for (let y = 0; y < rect.height; y++) {
    for (let x = 0; x < W; x++) {
      const a = alpha[y * W + x]!;
      if (a === 0) continue;
      const o = ((rect.y + y) * canvas.width + rect.x + x) * 3;
      const s = (y * W + x) * 3;
      for (let c = 0; c < 3; c++) data[o + c] = a === 1 ? decoded.data[s + c]! : Math.round(a * decoded.data[s + c]! + (1 - a) * data[o + c]!);
    }
  }
}

