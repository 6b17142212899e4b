/**
 * The pieces every Stable Diffusion run here is made of (txt2img, its refinement and face
 * passes, outpainting): a stage clock, the [negative ‖ prompt] text encoding and the VAE in both
 * directions (classifier-free guidance lives with the denoisers). One version of each, so a change to how a graph is
 * fed reaches every pipeline, and so does the check that a decoded image holds only finite values.
 */
import type { RawImage } from '../image/raw.ts';
import { finalLayerNorm, SKIP_LAYER_ROLE } from './clip-skip.ts';
import type { TextConditioning } from './denoisers.ts';
import type { GraphSession } from './graph-session.ts';
import { allFinite, NonFiniteOutputError } from './non-finite.ts';
import type { ModelSessions } from './sessions.ts';
import { floatTensor, idsTensor, toFloat32, unpackRgbPlanar } from './tensors.ts';
import { canvasTiles, cropPlanes, TileBlender, tileWeights, type LatentTiling } from './tiles.ts';

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

/**
 * Tokenizes and encodes [negative, prompt] in one text-encoder call; drops the negative row when
 * `cfg` is false, and always for the denoiser of a model whose UNet embeds the guidance (a full
 * LCM checkpoint: lcm-guidance.ts), so such a model never doubles its batch. The inpainting UNet
 * (`for: 'unet_inpaint'`) is a graph of its own, with ordinary CFG whatever the denoiser does.
 * With the model's clipSkip above 1, the conditioning is its chosen layer through the final layer
 * norm (clip-skip.ts) instead of last_hidden_state.
 */
export async function encodePrompts(
  model: ModelSessions,
  prompt: string,
  negativePrompt: string,
  cfg: boolean,
  graph: 'denoiser' | 'unet_inpaint' = 'denoiser',
): Promise<TextConditioning> {
  const te = model.graphs.text_encoder;
  const guidanceEmbedded = graph === 'denoiser' && model.denoiser.embedsGuidance;
  const texts = cfg && !guidanceEmbedded ? [negativePrompt, prompt] : [prompt];
  const ids = model.tokenizer.encodeBatch(texts);
  const role = model.clipSkip ? SKIP_LAYER_ROLE : 'last_hidden_state';
  const out = await te.run({ input_ids: idsTensor(te.input('input_ids').type, ids, [texts.length, model.tokenizer.maxLength]) }, [role]);
  const t = out[role]!;
  const [, tokens = 0, width = 0] = t.dims;
  const hidden = model.clipSkip ? finalLayerNorm(toFloat32(t), width, model.clipSkip) : toFloat32(t);
  return { hidden, rows: texts.length, tokens, width };
}

/**
 * RGB planes [3,H,W] in [-1,1] → diffusion-space latents [4,H/8,W/8]: the mean when the encoder
 * returns mean ‖ logvar (diffusers' argmax mode). Large canvases are encoded tile by tile and the
 * tiles' latents blended over their overlaps.
 */
export async function vaeEncode(model: ModelSessions, planes: Float32Array, width: number, height: number, tiling?: LatentTiling): Promise<Float32Array> {
  const h = height / 8;
  const w = width / 8;
  const grid = tiling && canvasTiles(w, h, tiling);
  if (!grid) return vaeEncodeOnce(model, planes, width, height);
  const blender = new TileBlender(4, w, h);
  for (const rect of grid.tiles) {
    const pixels = { x: rect.x * 8, y: rect.y * 8, width: rect.width * 8, height: rect.height * 8 };
    const part = await vaeEncodeOnce(model, cropPlanes(planes, 3, width, height, pixels), pixels.width, pixels.height);
    blender.add(part, rect, tileWeights(rect, grid));
  }
  return blender.finish();
}

async function vaeEncodeOnce(model: ModelSessions, planes: Float32Array, width: number, height: number): Promise<Float32Array> {
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
  // Caught here, or the img2img loop carries them on and the decode blames the denoiser.
  if (!allFinite(latents)) throw new NonFiniteOutputError(`model '${model.id}': the VAE encoder gave non-finite latents (NaN or Inf), as an fp16 encoder that overflows does`);
  return latents;
}

/** One image's latents [4,h,w] (diffusion space) → RGB of 8w × 8h; large canvases tile by tile, blended in pixels. */
export async function vaeDecode(model: ModelSessions, latents: Float32Array, h: number, w: number, tiling?: LatentTiling): Promise<RawImage> {
  const grid = tiling && canvasTiles(w, h, tiling);
  if (!grid) return unpackRgbPlanar(await vaeDecodeOnce(model, latents, h, w), 0, 8 * w, 8 * h);
  const pixelGrid = { width: 8 * w, height: 8 * h, overlap: 8 * grid.overlap };
  const blender = new TileBlender(3, 8 * w, 8 * h);
  for (const rect of grid.tiles) {
    const pixels = { x: rect.x * 8, y: rect.y * 8, width: rect.width * 8, height: rect.height * 8 };
    blender.add(await vaeDecodeOnce(model, cropPlanes(latents, 4, w, h, rect), rect.height, rect.width), pixels, tileWeights(pixels, pixelGrid));
  }
  return unpackRgbPlanar(blender.finish(), 0, 8 * w, 8 * h);
}

/**
 * Latents [4,h,w] → RGB planes [3,8h,8w] in [-1,1]. A decoder output with NaN or Inf (an fp16
 * decoder that overflowed) is decoded again with the model's vae_decoder_fp32 when it has one;
 * otherwise, or when that fails too, the decode throws NonFiniteOutputError instead of letting
 * the NaN become a black image.
 */
async function vaeDecodeOnce(model: ModelSessions, latents: Float32Array, h: number, w: number): Promise<Float32Array> {
  // Non-finite latents come from the denoiser: no decoder can help, so say where they came from.
  if (!allFinite(latents)) throw new NonFiniteOutputError(`model '${model.id}': the denoiser gave non-finite latents (NaN or Inf), as an fp16 UNet that overflows does`);
  const k = 1 / model.spec.latentScale;
  const scaled = new Float32Array(latents.length);
  for (let i = 0; i < scaled.length; i++) scaled[i] = latents[i]! * k;
  const pixels = await runVaeDecoder(model.graphs.vae_decoder, scaled, h, w);
  if (allFinite(pixels)) return pixels;
  const fp32 = model.graphs.vae_decoder_fp32;
  if (!fp32) {
    throw new NonFiniteOutputError(
      `model '${model.id}': the VAE decoder gave non-finite pixels (NaN or Inf, as an fp16 decoder that overflows does) and the model names no graphs.vae_decoder_fp32 to decode them again`,
    );
  }
  const again = await runVaeDecoder(fp32, scaled, h, w);
  if (allFinite(again)) return again;
  throw new NonFiniteOutputError(`model '${model.id}': both VAE decoders (vae_decoder and vae_decoder_fp32) gave non-finite pixels (NaN or Inf)`);
}

async function runVaeDecoder(vae: GraphSession, scaled: Float32Array, h: number, w: number): Promise<Float32Array> {
  const out = await vae.run({ latent_sample: floatTensor(vae.floatType('latent_sample'), scaled, [1, 4, h, w]) }, ['sample']);
  const img = out.sample!;
  const [, c, H, W] = img.dims;
  if (c !== 3 || H !== 8 * h || W !== 8 * w) throw new Error(`${vae.path}: output is [${img.dims.join(', ')}], expected [1, 3, ${8 * h}, ${8 * w}]`);
  return toFloat32(img);
}
