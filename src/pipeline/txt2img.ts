/**
 * ControlNet text-to-image: prompt + control image (the QR code) → RGB images of exactly the
 * requested size.
 *
 * One run:
 *   1. Tokenize [negative, styled prompt]; one text-encoder call gives [uncond ‖ cond].
 *   2. Noise per image from its own GaussianStream(seed + i), so image i of a batch is the
 *      image a single run with seed + i gives (the streams also feed samplers that inject noise).
 *   3. Denoise at the generation frame: the output's own size when it fits the model's native
 *      area, else the largest size of exactly its aspect that does (framing.ts). Each step is one
 *      call of the model's denoiser (denoisers.ts: one fused graph, or ControlNet + UNet), with
 *      the control window of diffusers' controlnet_keep rule and classifier-free guidance.
 *   4. Per image: VAE decode; for outputs larger than the generation (HD, FullHD, UltraHD) a
 *      refinement: Lanczos up to the refinement frame (the output's size up to refine.maxPixels,
 *      exact aspect), img2img at low strength (refine.strength, 0.3) with the control image at
 *      that size, in native-size tiles (tiles.ts) so no call attends over more tokens than a
 *      native generation; then the frame's content is resized to the exact output size (a
 *      uniform scale: nothing is stretched). Images are refined one at a time so peak memory
 *      does not grow with batchSize. Without a vae_encoder (or strength 0) the output is the
 *      Lanczos upscale alone.
 */
import { cropImage } from '../image/canvas.ts';
import type { RawImage } from '../image/raw.ts';
import type { PresetName } from '../workflows/presets.ts';
import ort from 'onnxruntime-node';
import type { Rect } from '../image/canvas.ts';
import type { DenoiserStage, StepModel } from './denoisers.ts';
import { encodePrompts, StageClock, vaeDecode, vaeEncode } from './diffusion-parts.ts';
import { frameFor, fromFrame, intoFrame, reframe, type Frame, type Size } from './framing.ts';
import { applyPreset } from './prompts.ts';
import { GaussianStream, MAX_SEED } from './random.ts';
import { createScheduler, img2imgStartIndex, type NoiseSource, type Scheduler, type SchedulerConfig, type SchedulerName } from './schedulers/index.ts';
import type { DiffusionModel } from './sessions.ts';
import type { TextConditioning } from './denoisers.ts';
import { canvasTiles, cropPlanes, latentTiling, NATIVE_SLACK, TileBlender, tileWeights } from './tiles.ts';
import { packRgbPlanar } from './tensors.ts';

export type { Size } from './framing.ts';

export interface Txt2ImgRequest {
  readonly prompt: string;
  readonly negativePrompt?: string;
  readonly preset?: PresetName;
  readonly seed: number;
  readonly batchSize: number;
  readonly steps: number;
  readonly guidance: number;
  readonly scheduler: SchedulerName;
  /** Overrides of the model's scheduler config (manifest). */
  readonly schedulerConfig?: Partial<SchedulerConfig>;
  /** 1- or 3-channel control image (dark modules dark), normally at width × height. */
  readonly control: RawImage;
  /** ControlNet conditioning scale (the API's qrStrength). */
  readonly controlScale: number;
  /** Fractions of the schedule during which the ControlNet applies. */
  readonly controlStart: number;
  readonly controlEnd: number;
  readonly width: number;
  readonly height: number;
  /** Overrides the model's native size (tests and quick demo runs). */
  readonly nativeSize?: number;
  /** Overrides the manifest's refine settings; false turns refinement off. */
  readonly refine?: { readonly strength?: number; readonly maxPixels?: number } | false;
}

/** The img2img passes that run after generation: refinement (upscaling), the face pass and the code regeneration. */
export type PassPrefix = 'refine_' | 'face_' | 'code_';
type PassStage = 'vae_encode' | DenoiserStage | 'scheduler' | 'vae_decode';

export type Txt2ImgStage = 'text_encoder' | 'control_planes' | DenoiserStage | 'scheduler' | 'vae_decode' | 'upscale' | `${PassPrefix}${PassStage}` | 'resize' | 'total';

export interface Txt2ImgResult {
  /** RGB, exactly width × height, in seed order. */
  readonly images: RawImage[];
  /** Milliseconds per stage (absent stages did not run). */
  readonly timings: Partial<Record<Txt2ImgStage, number>>;
  /** Size the model generated at. */
  readonly generated: Size;
  /** Size, tiles and step count of the refinement pass, when one ran. */
  readonly refined?: Size & { readonly steps: number; readonly tiles: number };
}

export type ProgressCallback = (step: number, total: number) => void;

export interface GenerateHooks {
  /** Called after every denoising step (refinement steps included) with the running count. */
  readonly onProgress?: ProgressCallback;
  /**
   * Called with each final image as soon as it exists (image i before image i+1 is decoded), so
   * a caller can check and encode it while the rest of the batch is still being made.
   */
  readonly onImage?: (index: number, image: RawImage) => void;
  readonly signal?: AbortSignal;
}

// ---------------------------------------------------------------------------------------------
// Sizes

/** The generation frame: the output's own size when it fits the native area, else the native area at exactly its aspect. */
export function generationFrame(output: Size, nativeSize: number, multiple = 8): Frame {
  const native = nativeSize * nativeSize;
  // The slack lets an output a hair over the native area keep its own size; larger ones shrink to the native area itself.
  return frameFor(output, output.width * output.height <= native * NATIVE_SLACK ? native * NATIVE_SLACK : native, multiple);
}

/** The refinement frame: the output's own size up to maxPixels, else maxPixels at exactly its aspect. */
export function refineFrame(output: Size, maxPixels: number, multiple = 8): Frame {
  return frameFor(output, maxPixels, multiple);
}

/** diffusers' controlnet_keep: is step i of n inside [start, end] of the schedule? */
export function controlActive(i: number, n: number, start: number, end: number): boolean {
  return !(i / n < start || (i + 1) / n > end);
}

// ---------------------------------------------------------------------------------------------
// The run

/** The stage clock of a txt2img run (its passes included). */
export type StageTimer = StageClock<Txt2ImgStage>;

export function checkRequest(r: Txt2ImgRequest): void {
  const int = (v: number, min: number, max: number, what: string): void => {
    if (!Number.isInteger(v) || v < min || v > max) throw new RangeError(`${what} must be an integer in [${min}, ${max}], got ${v}`);
  };
  int(r.batchSize, 1, 16, 'batchSize');
  int(r.steps, 1, 500, 'steps');
  int(r.width, 8, 8192, 'width');
  int(r.height, 8, 8192, 'height');
  int(r.seed, 0, MAX_SEED, 'seed');
  if (!(r.guidance >= 0)) throw new RangeError(`guidance must be >= 0, got ${r.guidance}`);
  if (!(r.controlScale >= 0)) throw new RangeError(`controlScale must be >= 0, got ${r.controlScale}`);
  if (!(r.controlStart >= 0 && r.controlStart < r.controlEnd && r.controlEnd <= 1)) {
    throw new RangeError(`need 0 <= controlStart < controlEnd <= 1, got ${r.controlStart}..${r.controlEnd}`);
  }
}

/** seed + i, wrapping inside [0, MAX_SEED] (computed without ever leaving the safe integers). */
export function imageSeed(seed: number, i: number): number {
  const room = MAX_SEED - seed;
  return i > room ? i - room - 1 : seed + i;
}

/** Generates request.batchSize images; see the file comment for the method. */
export async function generate(request: Txt2ImgRequest, target: DiffusionModel, hooks: GenerateHooks = {}): Promise<Txt2ImgResult> {
  checkRequest(request);
  const { onProgress, onImage, signal } = hooks;
  const { model } = target;
  const spec = model.spec;
  const timer: StageTimer = new StageClock();
  const started = performance.now();
  const B = request.batchSize;
  const output: Size = { width: request.width, height: request.height };
  const nativeSize = request.nativeSize ?? spec.nativeSize;
  const gen = generationFrame(output, nativeSize, spec.sizeMultiple);
  const cfg = request.guidance > 1;

  // Refinement plan (decided up front so progress totals are known).
  const refineOpts = request.refine === false ? { ...spec.refine, strength: 0 } : { ...spec.refine, ...request.refine };
  const upscaling = output.width * output.height > gen.width * gen.height;
  let refine: { frame: Frame; steps: number; start: number } | undefined;
  if (upscaling && refineOpts.strength > 0 && model.graphs.vae_encoder) {
    const frame = refineFrame(output, refineOpts.maxPixels, spec.sizeMultiple);
    const start = img2imgStartIndex(request.steps, refineOpts.strength);
    if (frame.width * frame.height > gen.width * gen.height && start < request.steps) refine = { frame, steps: request.steps - start, start };
  }
  const totalSteps = request.steps + (refine ? refine.steps * B : 0);
  let done = 0;
  const tick = (): void => {
    done++;
    onProgress?.(done, totalSteps);
    signal?.throwIfAborted();
  };
  signal?.throwIfAborted();

  // 1. Text.
  const styled = applyPreset(request.preset, request.prompt, request.negativePrompt ?? '');
  const text = await timer.time('text_encoder', () => encodePrompts(model, styled.prompt, styled.negativePrompt, cfg));

  // 2. Noise, one stream per image.
  const streams = Array.from({ length: B }, (_, i) => new GaussianStream(imageSeed(request.seed, i)));
  const h = gen.height / 8;
  const w = gen.width / 8;
  const per = 4 * h * w;

  // 3. Denoise at the generation frame.
  const control = await timer.time('control_planes', () => intoFrame(request.control, gen));
  const scheduler = createScheduler(request.scheduler, request.steps, { ...spec.scheduler.config, ...request.schedulerConfig });
  const latents = new Float32Array(B * per);
  streams.forEach((s, i) => {
    const noise = s.noise(per);
    for (let k = 0; k < per; k++) latents[i * per + k] = noise[k]! * scheduler.initNoiseSigma;
  });
  const batchNoise: NoiseSource = (n) => {
    const out = new Float32Array(n);
    const each = n / B;
    streams.forEach((s, i) => out.set(s.noise(each), i * each));
    return out;
  };
  const pass: PassContext = { target, request, timer, text, tick, stagePrefix: '', nativeSize };
  const denoised = await denoise({ ...pass, h, w, batch: B, control, scheduler, noise: batchNoise }, latents, 0);

  // 4. Per image: decode, refine when upscaling, back to the exact output size. Each image's
  // refinement draws from its own stream, so the order of this loop does not change any pixel.
  const refineControl = refine ? await timer.time('control_planes', () => intoFrame(request.control, refine.frame)) : undefined;
  const images: RawImage[] = [];
  let refineTiles = 0;
  for (let i = 0; i < B; i++) {
    let image = await timer.time('vae_decode', () => vaeDecode(model, denoised.subarray(i * per, (i + 1) * per), h, w));
    let frame = gen;
    if (refine) {
      const generated = image;
      const up = await timer.time('upscale', () => reframe(generated, gen, refine.frame));
      const stream = streams[i]!;
      const refined = await img2img({ ...pass, stagePrefix: 'refine_' }, up, refineControl!, refine.start, (n) => stream.noise(n));
      image = refined.image;
      refineTiles = refined.tiles;
      frame = refine.frame;
    }
    if (image.width !== output.width || image.height !== output.height) {
      const framed = image;
      const from = frame;
      image = await timer.time('resize', () => fromFrame(framed, from, output));
    }
    images.push(image);
    onImage?.(i, image);
  }
  timer.timings.total = performance.now() - started;
  return {
    images,
    timings: timer.timings,
    generated: { width: gen.width, height: gen.height },
    ...(refine ? { refined: { width: refine.frame.width, height: refine.frame.height, steps: refine.steps, tiles: refineTiles } } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Building blocks shared with the img2img passes (refinement here, the face pass in face-pass.ts)

/** What an img2img pass shares with the run it belongs to. */
export interface PassContext {
  readonly target: DiffusionModel;
  /** Guidance, control scale and window, steps and scheduler of the run. */
  readonly request: Txt2ImgRequest;
  readonly timer: StageTimer;
  readonly text: TextConditioning;
  readonly tick: () => void;
  readonly stagePrefix: '' | PassPrefix;
  /** Largest side of one denoiser call: larger canvases are cut into tiles of this size. */
  readonly nativeSize: number;
}

/**
 * Side of the square a crop of `side` px is redrawn at by a local pass (the face pass, the code
 * regeneration): at least the model's native size, so a small crop is not drawn below it, at most
 * what refinement may spend, a multiple of the model's size step.
 */
export function passWorkSide(spec: DiffusionModel['model']['spec'], side: number): number {
  const cap = Math.floor(Math.sqrt(spec.refine.maxPixels) / spec.sizeMultiple) * spec.sizeMultiple;
  return Math.min(cap, Math.ceil(Math.max(side, spec.nativeSize) / spec.sizeMultiple) * spec.sizeMultiple);
}

/**
 * img2img of one image at its own size (sides multiples of 8): VAE-encode, noise to step
 * `start` of a fresh schedule, denoise from there with `control` (the same size as the image),
 * decode. Canvases larger than the native area are encoded, denoised and decoded in overlapping
 * native-size tiles. `noise` feeds both the initial noise and any noise the sampler injects.
 */
export async function img2img(pass: PassContext & { readonly stagePrefix: PassPrefix }, image: RawImage, control: RawImage, start: number, noise: NoiseSource): Promise<{ image: RawImage; tiles: number }> {
  const { target, request, timer, stagePrefix: prefix } = pass;
  const h = image.height / 8;
  const w = image.width / 8;
  const planes = new Float32Array(3 * image.width * image.height);
  packRgbPlanar(image, planes, 0, 2, -1);
  const tiling = latentTiling(pass.nativeSize, target.model.spec.sizeMultiple);
  const clean = await timer.time(`${prefix}vae_encode`, () => vaeEncode(target.model, planes, image.width, image.height, tiling));
  const scheduler = createScheduler(request.scheduler, request.steps, { ...target.model.spec.scheduler.config, ...request.schedulerConfig });
  const noisy = scheduler.addNoise(clean, noise(clean.length), start);
  const out = await denoise({ ...pass, h, w, batch: 1, control, scheduler, noise }, noisy, start);
  const tiles = canvasTiles(w, h, tiling)?.tiles.length ?? 1;
  return { image: await timer.time(`${prefix}vae_decode`, () => vaeDecode(target.model, out, h, w, tiling)), tiles };
}

interface LoopContext extends PassContext {
  readonly h: number;
  readonly w: number;
  readonly batch: number;
  /** The control image at 8w × 8h. */
  readonly control: RawImage;
  readonly scheduler: Scheduler;
  readonly noise: NoiseSource;
}

interface Region {
  readonly rect: Rect;
  readonly model: StepModel;
  readonly weights?: Float32Array;
}

/** One denoiser per tile of the latent canvas (one tile when it fits the native area). */
async function startRegions(ctx: LoopContext): Promise<Region[]> {
  const { h, w, batch, request, text, timer, stagePrefix } = ctx;
  const time = <T>(stage: DenoiserStage, fn: () => Promise<T>): Promise<T> => timer.time(`${stagePrefix}${stage}` as Txt2ImgStage, fn);
  const setup = { text, batch, controlScale: request.controlScale, guidance: request.guidance, time };
  const grid = canvasTiles(w, h, latentTiling(ctx.nativeSize, ctx.target.model.spec.sizeMultiple));
  if (!grid) return [{ rect: { x: 0, y: 0, width: w, height: h }, model: await ctx.target.denoiser.start({ ...setup, h, w, control: ctx.control }) }];
  const regions: Region[] = [];
  try {
    for (const rect of grid.tiles) {
      const control = cropImage(ctx.control, { x: rect.x * 8, y: rect.y * 8, width: rect.width * 8, height: rect.height * 8 });
      regions.push({ rect, weights: tileWeights(rect, grid), model: await ctx.target.denoiser.start({ ...setup, h: rect.height, w: rect.width, control }) });
    }
  } catch (err) {
    // A tile that cannot start (the device out of memory) frees what the tiles before it put there.
    for (const r of regions) r.model.release();
    throw err;
  }
  return regions;
}

/**
 * The sampling loop from step `start` (0 for txt2img; img2img starts later). With several tiles,
 * each step's noise prediction is the weighted mean of the tiles' (MultiDiffusion), and the
 * sampler steps on the whole canvas. Where the denoiser can keep its tensors on the device and
 * the sampler's step is linear, the whole loop stays there (deviceLoop).
 */
async function denoise(ctx: LoopContext, initial: Float32Array, start: number): Promise<Float32Array> {
  const regions = await startRegions(ctx);
  try {
    const only = regions.length === 1 ? regions[0]!.model.onDevice : undefined;
    const linear = only && ctx.scheduler.timesteps.slice(start).every((_, k) => ctx.scheduler.linearStep(start + k, k === 0) !== undefined);
    return only && linear ? await deviceLoop(ctx, only, initial, start) : await hostLoop(ctx, regions, initial, start);
  } finally {
    for (const r of regions) r.model.release();
  }
}

/** Whether the ControlNet applies at step i of a loop that starts at `start` (img2img applies the window to the steps it runs, as diffusers' img2img pipeline does). */
function controlOn(ctx: LoopContext, i: number, start: number): boolean {
  const { request, scheduler } = ctx;
  return request.controlScale > 0 && controlActive(i - start, scheduler.timesteps.length - start, request.controlStart, request.controlEnd);
}

async function hostLoop(ctx: LoopContext, regions: readonly Region[], initial: Float32Array, start: number): Promise<Float32Array> {
  const { timer, h, w, batch, scheduler } = ctx;
  const n = scheduler.timesteps.length;
  const blender = regions.length > 1 ? new TileBlender(4 * batch, w, h) : undefined;
  const eps = blender ? new Float32Array(batch * 4 * h * w) : undefined;
  let latents = initial;
  for (let i = start; i < n; i++) {
    const t = scheduler.timesteps[i]!;
    const input = scheduler.scaleModelInput(latents, i);
    const active = controlOn(ctx, i, start);
    let pred: Float32Array;
    if (!blender) {
      pred = await regions[0]!.model.predict(input, t, active);
    } else {
      for (const r of regions) blender.add(await r.model.predict(cropPlanes(input, 4 * batch, w, h, r.rect), t, active), r.rect, r.weights!);
      pred = blender.finish(eps);
    }
    latents = await timer.time(`${ctx.stagePrefix}scheduler` as Txt2ImgStage, () => scheduler.step(pred, i, latents, ctx.noise));
    ctx.tick();
  }
  return latents;
}

/**
 * The loop with the latents on the device: each step is the denoiser's call and the sampler's
 * step graph, both on device tensors; only the timestep, the scales, the step's coefficients and
 * (for samplers that inject it) the host-drawn noise go up; the latents come down once, at the end.
 */
async function deviceLoop(ctx: LoopContext, device: NonNullable<StepModel['onDevice']>, initial: Float32Array, start: number): Promise<Float32Array> {
  const { timer, h, w, batch, scheduler } = ctx;
  const n = scheduler.timesteps.length;
  const dims = [batch, 4, h, w];
  const size = batch * 4 * h * w;
  let x: ort.Tensor = new ort.Tensor('float32', initial, dims);
  let modelIn: ort.Tensor = new ort.Tensor('float32', scheduler.scaleModelInput(initial, start), dims);
  let kept: ort.Tensor | undefined;
  const owned = new Set<ort.Tensor>();
  const drop = (t: ort.Tensor | undefined) => t && owned.delete(t) && t.dispose();
  try {
    for (let i = start; i < n; i++) {
      const pred = await device.predict(modelIn, scheduler.timesteps[i]!, controlOn(ctx, i, start));
      owned.add(pred);
      const c = scheduler.linearStep(i, i === start)!;
      const noise = c.noise !== 0 ? ctx.noise(size) : undefined;
      const nextScale = i + 1 < n ? scheduler.modelInputScale(i + 1) : 1;
      const next = await timer.time(`${ctx.stagePrefix}scheduler` as Txt2ImgStage, () => device.io.step(x, pred, kept, noise, c, nextScale));
      for (const t of [pred, x, kept, modelIn]) drop(t);
      for (const t of [next.x, next.kept, next.modelIn]) owned.add(t);
      ({ x, kept, modelIn } = next);
      ctx.tick();
    }
    return Float32Array.from(await device.io.download(x));
  } finally {
    for (const t of owned) t.dispose();
  }
}
