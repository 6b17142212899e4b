/**
 * ControlNet text-to-image: prompt + control image (the QR code) → RGB images of exactly the
 * requested size.
 *
 * One run:
 *   1. Tokenize [negative, styled prompt]; one text-encoder call gives [uncond ‖ cond].
 *   2. Noise per image from its own GaussianStream(seed + i), so image i of a batch is the
 *      image a single run with seed + i gives (the streams also feed samplers that inject noise).
 *   3. Each step runs ControlNet and UNet once on a batch of 2·B ([uncond ‖ cond], diffusers'
 *      layout) and combines eps = u + g·(c − u); guidance ≤ 1 skips the unconditional half.
 *      The ControlNet runs only on steps inside [controlStart, controlEnd] of the schedule
 *      (diffusers' controlnet_keep rule); elsewhere the UNet gets zero residuals, which is
 *      exactly "no control" (residuals are added to the UNet's skip connections).
 *   4. VAE decode (latents / latentScale), one image at a time to bound memory.
 *
 * Size: the model generates at about its native area (nativeSize², the spec's SD row is exactly
 * that at every aspect ratio), aspect kept, sides multiples of sizeMultiple. An output that is
 * no larger is generated at its own size (rounded) and resized to the exact size. A larger one
 * (HD, FullHD, UltraHD) is upscaled with Lanczos and refined: VAE-encode, img2img at low
 * strength (manifest refine.strength, 0.3) with the control image at that size, decode. The
 * refinement runs at the output size up to refine.maxPixels and is Lanczos-resized from there:
 * a real SD1.5 UNet cannot attend over an UltraHD latent (480×270 = 130k tokens), and the
 * detail a 0.3-strength pass adds at ~2.4 MP is what the last upscale keeps. Images are refined
 * one at a time (batch 2 for CFG) so peak memory does not grow with batchSize. Without a
 * vae_encoder (or strength 0) the output is the Lanczos upscale alone.
 */
import type ort from 'onnxruntime-node';
import { resizeImage } from '../image/decode.ts';
import type { RawImage } from '../image/raw.ts';
import type { PresetName } from '../workflows/presets.ts';
import { applyPreset } from './prompts.ts';
import { GaussianStream, MAX_SEED } from './random.ts';
import { createScheduler, img2imgStartIndex, type NoiseSource, type Scheduler, type SchedulerConfig, type SchedulerName } from './schedulers/index.ts';
import { CONTROL_RESIDUALS, type DiffusionModel } from './sessions.ts';
import { encodePrompts, guide, StageClock, textForBatch, vaeDecode, vaeEncode, type TextConditioning } from './diffusion-parts.ts';
import { floatTensor, packRgbPlanar, product, toFloat32 } from './tensors.ts';

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

export type Txt2ImgStage =
  | 'text_encoder'
  | 'control_planes'
  | 'controlnet'
  | 'unet'
  | 'scheduler'
  | 'vae_decode'
  | 'upscale'
  | `${PassPrefix}${PassStage}`
  | 'resize'
  | 'total';

/** The img2img passes that run after generation: refinement (upscaling) and the face pass. */
export type PassPrefix = 'refine_' | 'face_';
type PassStage = 'vae_encode' | 'controlnet' | 'unet' | 'scheduler' | 'vae_decode';

export interface Size {
  readonly width: number;
  readonly height: number;
}

export interface Txt2ImgResult {
  /** RGB, exactly width × height, in seed order. */
  readonly images: RawImage[];
  /** Milliseconds per stage (absent stages did not run). */
  readonly timings: Partial<Record<Txt2ImgStage, number>>;
  /** Size the model generated at. */
  readonly generated: Size;
  /** Size and step count of the refinement pass, when one ran. */
  readonly refined?: Size & { readonly steps: number };
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

const roundTo = (v: number, m: number): number => Math.max(m, Math.round(v / m) * m);

/** The size to generate at: the output's own (rounded) when it fits the native area, else the native area at its aspect. */
export function generationSize(output: Size, nativeSize: number, multiple = 8): Size {
  const area = output.width * output.height;
  const budget = nativeSize * nativeSize;
  // 5% slack so sizes a hair over the native area (rounding) are not shrunk and upscaled again.
  const scale = area <= budget * 1.05 ? 1 : Math.sqrt(budget / area);
  return { width: roundTo(output.width * scale, multiple), height: roundTo(output.height * scale, multiple) };
}

/** The refinement size: the output's own up to maxPixels, else maxPixels at its aspect. */
export function refineSize(output: Size, maxPixels: number, multiple = 8): Size {
  const area = output.width * output.height;
  const scale = area <= maxPixels ? 1 : Math.sqrt(maxPixels / area);
  return { width: roundTo(output.width * scale, multiple), height: roundTo(output.height * scale, multiple) };
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
  const gen = generationSize(output, request.nativeSize ?? spec.nativeSize, spec.sizeMultiple);
  const cfg = request.guidance > 1;

  // Refinement plan (decided up front so progress totals are known).
  const refineOpts = request.refine === false ? { ...spec.refine, strength: 0 } : { ...spec.refine, ...request.refine };
  const upscaling = output.width * output.height > gen.width * gen.height;
  let refine: (Size & { steps: number; start: number }) | undefined;
  if (upscaling && refineOpts.strength > 0 && model.graphs.vae_encoder) {
    const size = refineSize(output, refineOpts.maxPixels, spec.sizeMultiple);
    const start = img2imgStartIndex(request.steps, refineOpts.strength);
    if (size.width * size.height > gen.width * gen.height && start < request.steps) refine = { ...size, steps: request.steps - start, start };
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

  // 3. Denoise at the generation size.
  const control = await timer.time('control_planes', () => controlPlanes(request.control, gen));
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
  const denoised = await denoise(
    { target, request, timer, h, w, batch: B, text, control, scheduler, noise: batchNoise, tick, stagePrefix: '' },
    latents,
    0,
  );

  // 4. Per image: decode, refine when upscaling, resize to the exact output size. Each image's
  // refinement draws from its own stream, so the order of this loop does not change any pixel.
  const refineControl = refine ? await timer.time('control_planes', () => controlPlanes(request.control, refine)) : undefined;
  const images: RawImage[] = [];
  for (let i = 0; i < B; i++) {
    let image = await timer.time('vae_decode', () => vaeDecode(model, denoised.subarray(i * per, (i + 1) * per), h, w));
    if (refine) {
      const up = await timer.time('upscale', () => resizeImage(image, refine.width, refine.height, 'fill'));
      const stream = streams[i]!;
      const pass = { target, request, timer, text, tick, stagePrefix: 'refine_' } as const;
      image = await img2img(pass, up, refineControl!, refine.start, (n) => stream.noise(n));
    }
    if (image.width !== output.width || image.height !== output.height) {
      const generated = image;
      image = await timer.time('resize', () => resizeImage(generated, output.width, output.height, 'fill'));
    }
    images.push(image);
    onImage?.(i, image);
  }
  timer.timings.total = performance.now() - started;
  return { images, timings: timer.timings, generated: gen, ...(refine ? { refined: { width: refine.width, height: refine.height, steps: refine.steps } } : {}) };
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
  readonly stagePrefix: PassPrefix;
}

/**
 * img2img of one image at its own size (sides multiples of 8): VAE-encode, noise to step
 * `start` of a fresh schedule, denoise from there with the control planes (RGB in [0,1] at the
 * image's size), decode. `noise` feeds both the initial noise and any noise the sampler injects.
 */
export async function img2img(pass: PassContext, image: RawImage, control: Float32Array, start: number, noise: NoiseSource): Promise<RawImage> {
  const { target, request, timer, stagePrefix } = pass;
  const h = image.height / 8;
  const w = image.width / 8;
  const planes = new Float32Array(3 * image.width * image.height);
  packRgbPlanar(image, planes, 0, 2, -1);
  const clean = await timer.time(`${stagePrefix}vae_encode`, () => vaeEncode(target.model, planes, image.width, image.height));
  const scheduler = createScheduler(request.scheduler, request.steps, { ...target.model.spec.scheduler.config, ...request.schedulerConfig });
  const noisy = scheduler.addNoise(clean, noise(clean.length), start);
  const out = await denoise({ ...pass, h, w, batch: 1, control, scheduler, noise }, noisy, start);
  return timer.time(`${stagePrefix}vae_decode`, () => vaeDecode(target.model, out, h, w));
}

interface LoopContext {
  readonly target: DiffusionModel;
  readonly request: Txt2ImgRequest;
  readonly timer: StageTimer;
  readonly h: number;
  readonly w: number;
  readonly batch: number;
  readonly text: TextConditioning;
  /** Control image as RGB planes in [0,1] at 8h × 8w. */
  readonly control: Float32Array;
  readonly scheduler: Scheduler;
  readonly noise: NoiseSource;
  readonly tick: () => void;
  readonly stagePrefix: '' | PassPrefix;
}

/** The sampling loop from step `start` (0 for txt2img; img2img starts later). */
async function denoise(ctx: LoopContext, initial: Float32Array, start: number): Promise<Float32Array> {
  const { target, request, timer, h, w, batch, text, scheduler } = ctx;
  const { unet } = target.model.graphs;
  const cn = target.controlnet;
  const cfg = text.rows === 2;
  const rows = text.rows * batch;
  const per = 4 * h * w;
  const hidden = textForBatch(text, batch);
  const hiddenDims = [rows, text.tokens, text.width];
  const unetHidden = floatTensor(unet.floatType('encoder_hidden_states'), hidden, hiddenDims);
  const cnHidden = floatTensor(cn.floatType('encoder_hidden_states'), hidden, hiddenDims);
  const plane = ctx.control.length;
  const condData = new Float32Array(rows * plane);
  for (let r = 0; r < rows; r++) condData.set(ctx.control, r * plane);
  const cond = floatTensor(cn.floatType('controlnet_cond'), condData, [rows, 3, 8 * h, 8 * w]);
  const scale = cn.scaleTensor(request.controlScale);
  let zeros: Record<string, ort.Tensor> | undefined;
  const zeroResiduals = (): Record<string, ort.Tensor> =>
    (zeros ??= Object.fromEntries(
      CONTROL_RESIDUALS.map((r) => {
        const dims = [rows, r.channels, Math.ceil(h / r.factor), Math.ceil(w / r.factor)];
        return [r.role, floatTensor(unet.floatType(r.role), new Float32Array(product(dims)), dims)];
      }),
    ));
  const n = scheduler.timesteps.length;
  const loopLength = n - start;
  const stage = (s: 'controlnet' | 'unet' | 'scheduler'): Txt2ImgStage => `${ctx.stagePrefix}${s}`;

  // One model-input and one guidance buffer for the whole loop: a fresh pair per step is
  // garbage the collector has to chase between ONNX runs.
  const modelIn = new Float32Array(rows * per);
  const guided = cfg ? new Float32Array(batch * per) : undefined;
  const sampleDims = [rows, 4, h, w];
  let latents = initial;
  for (let i = start; i < n; i++) {
    const t = scheduler.timesteps[i]!;
    const input = scheduler.scaleModelInput(latents, i);
    modelIn.set(input, 0);
    if (cfg) modelIn.set(input, batch * per);
    // img2img applies the window to the steps it runs, as diffusers' img2img pipeline does.
    const active = request.controlScale > 0 && controlActive(i - start, loopLength, request.controlStart, request.controlEnd);
    let residuals: Record<string, ort.Tensor>;
    if (active) {
      const out = await timer.time(stage('controlnet'), () =>
        cn.run({
          sample: floatTensor(cn.floatType('sample'), modelIn, sampleDims),
          timestep: cn.timestepTensor(t, rows),
          encoder_hidden_states: cnHidden,
          controlnet_cond: cond,
          conditioning_scale: scale,
        }),
      );
      residuals = {};
      for (const r of CONTROL_RESIDUALS) {
        const res = out[r.role]!;
        residuals[r.role] = res.type === unet.input(r.role).type ? res : floatTensor(unet.floatType(r.role), toFloat32(res), [...res.dims]);
      }
    } else {
      residuals = zeroResiduals();
    }
    const pred = await timer.time(stage('unet'), async () => {
      const out = await unet.run(
        {
          sample: floatTensor(unet.floatType('sample'), modelIn, sampleDims),
          timestep: unet.timestepTensor(t, rows),
          encoder_hidden_states: unetHidden,
          ...residuals,
        },
        ['out_sample'],
      );
      return toFloat32(out.out_sample!);
    });
    latents = await timer.time(stage('scheduler'), () => {
      const eps = guided ? guide(pred, request.guidance, guided) : pred.subarray(0, batch * per);
      return scheduler.step(eps, i, latents, ctx.noise);
    });
    ctx.tick();
  }
  return latents;
}

/** Control image → RGB planes in [0,1] at `size` (Lanczos when it is not already that size). */
export async function controlPlanes(image: RawImage, size: Size): Promise<Float32Array> {
  const src = image.width === size.width && image.height === size.height ? image : await resizeImage(image, size.width, size.height, 'fill');
  const out = new Float32Array(3 * size.width * size.height);
  packRgbPlanar(src, out);
  return out;
}
