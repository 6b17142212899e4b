/**
 * The pieces every Stable Diffusion run here is made of (txt2img, its refinement and face
 * passes, outpainting): a stage clock, the [negative ‖ prompt] text encoding, classifier-free
 * guidance, and the VAE in both directions. One version of each, so a change to how a graph is
 * fed reaches every pipeline.
 */
import type { RawImage } from '../image/raw.ts';
import type { ModelSessions } from './sessions.ts';
import { floatTensor, idsTensor, toFloat32, unpackRgbPlanar } from './tensors.ts';

/** Adds the wall time of each awaited stage to timings[stage] (stages may repeat). */
export class StageClock<S extends string> {
  readonly timings: Partial<Record<S, number>> = {};
  async time<T>(stage: S, fn: () => Promise<T> | T): Promise<T> {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.timings[stage] = (this.timings[stage] ?? 0) + performance.now() - t0;
    }
  }
}

/** Text-encoder rows for CFG: [uncond ‖ cond] (or cond alone without guidance), with their shape. */
export interface TextConditioning {
  /** rows × tokens × width floats, row-major. */
  readonly hidden: Float32Array;
  readonly rows: number;
  readonly tokens: number;
  readonly width: number;
}

/** Tokenizes and encodes [negative, prompt] in one text-encoder call; drops the negative row when `cfg` is false. */
export async function encodePrompts(model: ModelSessions, prompt: string, negativePrompt: string, cfg: boolean): Promise<TextConditioning> {
  const te = model.graphs.text_encoder;
  const texts = cfg ? [negativePrompt, prompt] : [prompt];
  const ids = model.tokenizer.encodeBatch(texts);
  const out = await te.run({ input_ids: idsTensor(te.input('input_ids').type, ids, [texts.length, model.tokenizer.maxLength]) }, ['last_hidden_state']);
  const t = out.last_hidden_state!;
  const [, tokens = 0, width = 0] = t.dims;
  return { hidden: toFloat32(t), rows: texts.length, tokens, width };
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

/** eps = u + g·(c − u) from a model output laid out [uncond ‖ cond], into `out` (one half long). */
export function guide(pred: Float32Array, guidance: number, out: Float32Array = new Float32Array(pred.length / 2)): Float32Array {
  const half = out.length;
  for (let k = 0; k < half; k++) {
    const u = pred[k]!;
    out[k] = u + guidance * (pred[half + k]! - u);
  }
  return out;
}

/**
 * RGB planes [3,H,W] in [-1,1] → diffusion-space latents [4,H/8,W/8]: the mean when the encoder
 * returns mean ‖ logvar (diffusers' argmax mode).
 */
export async function vaeEncode(model: ModelSessions, planes: Float32Array, width: number, height: number): Promise<Float32Array> {
  const vae = model.graphs.vae_encoder;
  if (!vae) throw new Error(`model '${model.id}' has no vae_encoder graph`);
  const out = await vae.run({ sample: floatTensor(vae.floatType('sample'), planes, [1, 3, height, width]) }, ['latent_sample']);
  const t = out.latent_sample!;
  const [, , h = 0, w = 0] = t.dims;
  if (h !== height / 8 || w !== width / 8) throw new Error(`${vae.path}: output is [${t.dims.join(', ')}], expected [1, 4|8, ${height / 8}, ${width / 8}]`);
  const per = 4 * h * w;
  const k = model.spec.latentScale;
  const data = toFloat32(t);
  const latents = new Float32Array(per);
  for (let i = 0; i < per; i++) latents[i] = data[i]! * k;
  return latents;
}

/** One image's latents [4,h,w] (diffusion space) → RGB of 8w × 8h. */
export async function vaeDecode(model: ModelSessions, latents: Float32Array, h: number, w: number): Promise<RawImage> {
  const vae = model.graphs.vae_decoder;
  const k = 1 / model.spec.latentScale;
  const scaled = new Float32Array(latents.length);
  for (let i = 0; i < scaled.length; i++) scaled[i] = latents[i]! * k;
  const out = await vae.run({ latent_sample: floatTensor(vae.floatType('latent_sample'), scaled, [1, 4, h, w]) }, ['sample']);
  const img = out.sample!;
  const [, c, H, W] = img.dims;
  if (c !== 3 || H !== 8 * h || W !== 8 * w) throw new Error(`${vae.path}: output is [${img.dims.join(', ')}], expected [1, 3, ${8 * h}, ${8 * w}]`);
  return unpackRgbPlanar(toFloat32(img), 0, W, H);
}
