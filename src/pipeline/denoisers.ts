/**
 * The noise predictor of one denoising step, behind one small interface, whatever the graphs:
 *
 *   fused      one graph (the `denoiser` role: UNet + ControlNet, e.g. made by `qr-art models
 *              fuse`): exactly one session.run per step. With a guidance_scale input it also does
 *              classifier-free guidance, so only the B latents go in and B predictions come out;
 *              without one (diffusers' fused export) the 2B-row batch goes in and CFG is done here.
 *   separate   a ControlNet graph and a ControlNet-ready UNet: the ControlNet's 13 residuals come
 *              out of ONNX Runtime and go back in as UNet inputs (~120 MB a step at 768² with CFG,
 *              fp32), then CFG here. Kept for exports that have not been fused. The residuals are
 *              passed on as they come: a pair that would need them scaled or converted is
 *              refused at start (seams.ts).
 *
 * Outside the control window (controlStart/controlEnd) the fused graph is called with a
 * conditioning scale of 0 (the residuals it adds are then exactly zero), the separate pair skips
 * the ControlNet and feeds zero residuals. Both give the images the unfused pipeline gives.
 *
 * start() prepares what stays the same over a loop (text rows, control image, scales) once; on
 * WebGPU those go up to the device once, and the fused graph's prediction stays there for the
 * device-side sampler step (device-io.ts, txt2img.ts), so the latents never come back per step.
 */
import ort from 'onnxruntime-node';
import type { RawImage } from '../image/raw.ts';
import { CONTROL_RESIDUALS } from '../onnx/control-residuals.ts';
import type { DeviceIo } from './device-io.ts';
import type { GraphSession } from './graph-session.ts';
import { embedsGuidance, guidanceCondTensor } from './lcm-guidance.ts';
import { checkSeparatePair } from './seams.ts';
import { floatTensor, packRgbPlanar, packRgbPlanarBytes, product, toFloat32 } from './tensors.ts';

/** Text-encoder rows for CFG: [uncond ‖ cond] (or cond alone without guidance), with their shape. */
export interface TextConditioning {
  /** rows × tokens × width floats, row-major. */
  readonly hidden: Float32Array;
  readonly rows: number;
  readonly tokens: number;
  readonly width: number;
}

export type DenoiserStage = 'controlnet' | 'unet' | 'denoiser';

/** What stays the same over one sampling loop. */
export interface DenoiseSetup {
  readonly text: TextConditioning;
  /** Images in the batch (B). */
  readonly batch: number;
  /** Latent size. */
  readonly h: number;
  readonly w: number;
  /** The control image at 8w × 8h (grey or RGB, dark modules dark). */
  readonly control: RawImage;
  readonly controlScale: number;
  readonly guidance: number;
  /** Times each model call under its stage name. */
  readonly time: <T>(stage: DenoiserStage, fn: () => Promise<T>) => Promise<T>;
}

export interface StepModel {
  /** Guided noise predictions (B × 4 × h × w) for the scaled model input of B images at timestep `t`. */
  predict(modelIn: Float32Array, t: number, controlActive: boolean): Promise<Float32Array>;
  /**
   * The same with the model input and the prediction left on the device (fused graphs that fold
   * guidance, on a provider that keeps tensors: see device-io.ts); absent otherwise.
   */
  readonly onDevice?: {
    readonly io: DeviceIo;
    predict(modelIn: ort.Tensor, t: number, controlActive: boolean): Promise<ort.Tensor>;
  };
  /** Frees what start() put on the device. */
  release(): void;
}

export interface Denoiser {
  readonly kind: 'fused' | 'separate';
  /** The graph(s) it runs (for warm-up and messages). */
  readonly graphs: readonly GraphSession[];
  /** A full LCM UNet (timestep_cond input): guidance goes into its embedding, and the text is never doubled for CFG (lcm-guidance.ts). */
  readonly embedsGuidance: boolean;
  start(setup: DenoiseSetup): Promise<StepModel>;
}

/** eps = u + g·(c − u) in float32 arithmetic (what a graph computes), from [uncond ‖ cond] rows into `out`. */
export function guide(pred: Float32Array, guidance: number, out: Float32Array = new Float32Array(pred.length / 2)): Float32Array {
  const f = Math.fround;
  const g = f(guidance);
  const half = out.length;
  for (let k = 0; k < half; k++) {
    const u = pred[k]!;
    out[k] = f(u + f(g * f(pred[half + k]! - u)));
  }
  return out;
}

/** The text rows for a model batch of n images: [uncond × n ‖ cond × n] with CFG, cond × n without. */
export function textForBatch(text: TextConditioning, n: number): Float32Array {
  const rowLen = text.tokens * text.width;
  const out = new Float32Array(text.rows * n * rowLen);
  for (let r = 0; r < text.rows * n; r++) {
    const source = Math.floor(r / n);
    out.set(text.hidden.subarray(source * rowLen, (source + 1) * rowLen), r * rowLen);
  }
  return out;
}

/** The control image as the graph's controlnet_cond: `copies` × RGB planes, uint8 0..255 or floats in [0,1]. */
function controlTensor(g: GraphSession, control: RawImage, copies: number): ort.Tensor {
  const info = g.input('controlnet_cond');
  const plane = 3 * control.width * control.height;
  // Rank 5: fused exports' leading ControlNet axis (one ControlNet here).
  const dims = [...(info.shape.length === 5 ? [1] : []), copies, 3, control.height, control.width];
  if (info.type === 'uint8') {
    const bytes = new Uint8Array(copies * plane);
    packRgbPlanarBytes(control, bytes, 0);
    for (let c = 1; c < copies; c++) bytes.copyWithin(c * plane, 0, plane);
    return new ort.Tensor('uint8', bytes, dims);
  }
  const floats = new Float32Array(copies * plane);
  packRgbPlanar(control, floats, 0);
  for (let c = 1; c < copies; c++) floats.copyWithin(c * plane, 0, plane);
  return floatTensor(g.floatType('controlnet_cond'), floats, dims);
}

/** Rows of a controlnet_cond batch: one when the graph fixes its batch axis at 1, else `n`. */
const condCopies = (g: GraphSession, n: number): number => {
  const shape = g.input('controlnet_cond').shape;
  return shape[shape.length - 4] === 1 ? 1 : n;
};

export class FusedDenoiser implements Denoiser {
  readonly kind = 'fused' as const;
  readonly graphs: readonly GraphSession[];
  /** With a guidance_scale input: CFG inside the graph, B rows in and out. */
  readonly foldsGuidance: boolean;
  readonly embedsGuidance: boolean;

  /** `device`: the graph runs where tensors can stay (its noise_pred output is left there). */
  constructor(
    readonly graph: GraphSession,
    readonly device?: DeviceIo,
  ) {
    this.graphs = [graph];
    this.foldsGuidance = graph.hasInput('guidance_scale');
    this.embedsGuidance = embedsGuidance(graph);
  }

  async start(s: DenoiseSetup): Promise<StepModel> {
    const g = this.graph;
    const B = s.batch;
    const cfg = s.text.rows === 2;
    const folded = this.foldsGuidance;
    // Folded: the graph spreads the text rows and the control image over the batch itself.
    const rows = folded ? B : s.text.rows * B;
    const hidden = folded ? s.text.hidden : textForBatch(s.text, B);
    const constant: Record<string, ort.Tensor> = {
      encoder_hidden_states: floatTensor(g.floatType('encoder_hidden_states'), hidden, [folded ? s.text.rows : rows, s.text.tokens, s.text.width]),
      controlnet_cond: controlTensor(g, s.control, condCopies(g, rows)),
    };
    if (folded) constant.guidance_scale = g.scalarTensor('guidance_scale', s.guidance);
    const guidanceCond = guidanceCondTensor(g, s.guidance, rows);
    if (guidanceCond) constant.timestep_cond = guidanceCond;
    // On a device that keeps tensors, the text rows and the control image go up once per loop.
    const device = this.device;
    const uploaded: ort.Tensor[] = [];
    if (device) {
      try {
        for (const key of ['encoder_hidden_states', 'controlnet_cond'] as const) {
          const t = constant[key]!;
          if (t.type === 'float32' || t.type === 'uint8') uploaded.push((constant[key] = await device.upload(t)));
        }
      } catch (err) {
        uploaded.forEach((t) => t.dispose());
        throw err;
      }
    }
    const on = g.scaleTensor(s.controlScale);
    const off = g.scaleTensor(0);
    const per = 4 * s.h * s.w;
    const dims = [rows, 4, s.h, s.w];
    const modelIn = folded ? undefined : new Float32Array(rows * per);
    const guided = !folded && cfg ? new Float32Array(B * per) : undefined;
    const run = (sample: ort.Tensor, t: number, active: boolean) =>
      s.time('denoiser', async () => (await g.run({ ...constant, sample, timestep: g.timestepTensor(t, rows), conditioning_scale: active ? on : off }, ['noise_pred'])).noise_pred!);
    return {
      predict: async (x, t, active) => {
        let sample = x;
        if (modelIn) {
          modelIn.set(x, 0);
          if (cfg) modelIn.set(x, B * per);
          sample = modelIn;
        }
        const out = await run(floatTensor(g.floatType('sample'), sample, dims), t, active);
        const pred = device ? await device.download(out) : toFloat32(out);
        if (out.location !== 'cpu') out.dispose();
        if (folded) return pred;
        return guided ? guide(pred, s.guidance, guided) : pred.subarray(0, B * per);
      },
      ...(device && folded && g.floatType('sample') === 'float32' ? { onDevice: { io: device, predict: run } } : {}),
      release: () => uploaded.forEach((t) => t.dispose()),
    };
  }
}

export class SeparateDenoiser implements Denoiser {
  readonly kind = 'separate' as const;
  readonly graphs: readonly GraphSession[];
  readonly embedsGuidance: boolean;

  constructor(
    readonly unet: GraphSession,
    readonly controlnet: GraphSession,
  ) {
    // Refuses a ControlNet without a scale input and a pair that differs in precision (seams.ts):
    // the residuals below go from one session into the other untouched.
    checkSeparatePair(unet, controlnet);
    this.graphs = [controlnet, unet];
    this.embedsGuidance = embedsGuidance(unet);
  }

  async start(s: DenoiseSetup): Promise<StepModel> {
    const { unet, controlnet: cn } = this;
    const B = s.batch;
    const cfg = s.text.rows === 2;
    const rows = s.text.rows * B;
    const per = 4 * s.h * s.w;
    const hidden = textForBatch(s.text, B);
    const hiddenDims = [rows, s.text.tokens, s.text.width];
    const encoderHidden = floatTensor(unet.floatType('encoder_hidden_states'), hidden, hiddenDims);
    const cond = controlTensor(cn, s.control, condCopies(cn, rows));
    const scale = cn.scaleTensor(s.controlScale);
    const guidanceCond = guidanceCondTensor(unet, s.guidance, rows);
    let zeros: Record<string, ort.Tensor> | undefined;
    const zeroResiduals = (): Record<string, ort.Tensor> =>
      (zeros ??= Object.fromEntries(
        CONTROL_RESIDUALS.map((r) => {
          const dims = [rows, r.channels, Math.ceil(s.h / r.factor), Math.ceil(s.w / r.factor)];
          return [r.role, floatTensor(unet.floatType(r.role), new Float32Array(product(dims)), dims)];
        }),
      ));
    // One model-input and one guidance buffer for the whole loop: a fresh pair per step is
    // garbage the collector has to chase between ONNX runs.
    const modelIn = new Float32Array(rows * per);
    const guided = cfg ? new Float32Array(B * per) : undefined;
    const sampleDims = [rows, 4, s.h, s.w];
    return {
      predict: async (x, t, active) => {
        modelIn.set(x, 0);
        if (cfg) modelIn.set(x, B * per);
        // The pair agrees on precision (seams.ts), so one sample tensor feeds both graphs.
        const sample = floatTensor(unet.floatType('sample'), modelIn, sampleDims);
        let residuals: Record<string, ort.Tensor>;
        if (active && s.controlScale > 0) {
          const out = await s.time('controlnet', () =>
            cn.run({ sample, timestep: cn.timestepTensor(t, rows), encoder_hidden_states: encoderHidden, controlnet_cond: cond, conditioning_scale: scale }),
          );
          residuals = out;
        } else {
          residuals = zeroResiduals();
        }
        const out = await s.time('unet', () =>
          unet.run({ sample, timestep: unet.timestepTensor(t, rows), encoder_hidden_states: encoderHidden, ...residuals, ...(guidanceCond ? { timestep_cond: guidanceCond } : {}) }, ['out_sample']),
        );
        const pred = toFloat32(out.out_sample!);
        return guided ? guide(pred, s.guidance, guided) : pred.subarray(0, B * per);
      },
      release: () => undefined,
    };
  }
}
