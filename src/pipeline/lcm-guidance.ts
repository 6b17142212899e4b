/**
 * Guidance for full LCM checkpoints (e.g. SimianLuo/LCM_Dreamshaper_v7): their UNet was distilled
 * with the guidance scale as an input, a `timestep_cond` of [B, D] floats (D = the UNet's
 * time_cond_proj_dim, 256 for LCM_Dreamshaper_v7) added to the timestep embedding. Such a model
 * runs WITHOUT classifier-free guidance: one text row and one UNet row per image, the guidance is
 * inside the embedding. (LCM-LoRA models have no such input; for them guidance > 1 is ordinary
 * CFG and doubles the batch.)
 *
 * The embedding, as diffusers computes it (verified against
 * diffusers src/diffusers/pipelines/latent_consistency_models/pipeline_latent_consistency_text2img.py
 * at 58eb52c0: `w = guidance_scale - 1` (the Imagen CFG convention; LCM's own paper uses w
 * directly), `get_guidance_scale_embedding(w, time_cond_proj_dim)`, and `do_classifier_free_guidance`
 * is always False there; StableDiffusionPipeline does the same when `unet.config.time_cond_proj_dim`
 * is set, and then turns CFG off):
 *
 *   w' = w · 1000;  half = floor(D / 2);  f_k = exp(−k · ln(10000) / (half − 1)), k = 0 … half−1
 *   emb = [sin(w'·f_0) … sin(w'·f_{half−1}) ‖ cos(w'·f_0) … cos(w'·f_{half−1})]  (‖ 0 when D is odd)
 *
 * computed in float32 (diffusers' default dtype), then cast to the latents' dtype.
 */
import type ort from 'onnxruntime-node';
import type { GraphSession } from './graph-session.ts';
import { floatTensor } from './tensors.ts';

/** The input role a full LCM UNet (or a fused graph made from one) takes its guidance embedding through. */
export const TIMESTEP_COND = 'timestep_cond';

/** The guidance embedding of one guidance scale `guidance` (diffusers' scale, w = guidance − 1): D floats. */
export function guidanceEmbedding(guidance: number, dim: number): Float32Array {
  if (!Number.isInteger(dim) || dim < 4) throw new RangeError(`timestep_cond width must be an integer >= 4, got ${dim}`);
  const f = Math.fround;
  const half = Math.floor(dim / 2);
  const w = f(f(guidance - 1) * 1000);
  const step = f(Math.log(10000) / (half - 1));
  const out = new Float32Array(dim); // the odd dimension's pad stays 0
  for (let k = 0; k < half; k++) {
    const arg = f(w * f(Math.exp(f(-k * step))));
    out[k] = Math.sin(arg);
    out[half + k] = Math.cos(arg);
  }
  return out;
}

/** The embedding repeated for `rows` rows: the [rows, D] timestep_cond a UNet takes. */
export function guidanceEmbeddingRows(guidance: number, dim: number, rows: number): Float32Array {
  const one = guidanceEmbedding(guidance, dim);
  const out = new Float32Array(rows * dim);
  for (let r = 0; r < rows; r++) out.set(one, r * dim);
  return out;
}

/** True when the graph takes a guidance embedding (a full LCM UNet): it must run without CFG rows. */
export const embedsGuidance = (g: GraphSession): boolean => g.hasInput(TIMESTEP_COND);

/**
 * The timestep_cond tensor of `rows` rows for `guidance`, in the graph's dtype; undefined when the
 * graph takes none. Its width is the graph's fixed second axis (the UNet's time_cond_proj_dim).
 */
export function guidanceCondTensor(g: GraphSession, guidance: number, rows: number): ort.Tensor | undefined {
  if (!embedsGuidance(g)) return undefined;
  const dim = g.input(TIMESTEP_COND).shape[1];
  if (typeof dim !== 'number' || dim <= 0) {
    throw new RangeError(`${g.path}: input '${g.input(TIMESTEP_COND).name}' (timestep_cond) needs a fixed width (the UNet's time_cond_proj_dim), got [${g.input(TIMESTEP_COND).shape.join(', ')}]`);
  }
  return floatTensor(g.floatType(TIMESTEP_COND), guidanceEmbeddingRows(guidance, dim, rows), [rows, dim]);
}
