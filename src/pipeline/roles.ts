/**
 * What each graph role must look like: input and output roles with the dtypes, ranks and fixed
 * sizes real exports use (design notes §4). GraphSession.bind checks a session against these at
 * start, so a wrong export fails at boot naming the file, not in the middle of a job.
 */
import { CONTROL_RESIDUALS } from '../onnx/control-residuals.ts';
import type { GraphRole } from './manifest.ts';

export const FLOATS = ['float32', 'float16'];
export const TIMESTEP_TYPES = ['float32', 'float16', 'float64', 'int64', 'int32'];
const SCALES = ['float64', 'float32', 'float16'];
const IDS = ['int32', 'int64'];

export interface IoContract {
  readonly role: string;
  readonly types: readonly string[];
  /** Allowed ranks (symbolic or fixed dims alike). */
  readonly ranks: readonly number[];
  /** Fixed sizes some axes must have when the graph fixes them: axis → allowed sizes. */
  readonly dims?: Readonly<Record<number, readonly number[]>>;
  /**
   * The value is as tall and wide as the output (or a fixed fraction of it): its last two axes
   * must be symbolic. A graph exported at one size would start and then fail every job at
   * another aspect ratio or resolution, after its whole generation.
   */
  readonly sized?: true;
  /**
   * The value's first axis holds the job's rows: batchSize images, twice that with
   * classifier-free guidance, one text row or two. Jobs differ in both, so the axis must be
   * symbolic: a graph exported at one batch passes the start-up test step (batch 1) and then
   * fails every job of another batch size or guidance, after it was charged and retried.
   */
  readonly batched?: true;
  readonly optional?: boolean;
}

export interface RoleContract {
  readonly inputs: readonly IoContract[];
  readonly outputs: readonly IoContract[];
}

const latent = (role: string, channels: number[]): IoContract => ({ role, types: FLOATS, ranks: [4], dims: { 1: channels }, sized: true });
const image = (role: string): IoContract => ({ role, types: FLOATS, ranks: [4], dims: { 1: [3] } });
/** An image at the output's size (the VAE's, the control image): unlike a classifier's input, never fixed. */
const canvas = (role: string): IoContract => ({ ...image(role), sized: true });
/** A latent of the denoising loop: as many rows as the job's images or its guidance batch. */
const rowsLatent = (role: string, channels: number[]): IoContract => ({ ...latent(role, channels), batched: true });
const timestep: IoContract = { role: 'timestep', types: TIMESTEP_TYPES, ranks: [0, 1] };
const hidden: IoContract = { role: 'encoder_hidden_states', types: FLOATS, ranks: [3] };
/** The text rows of the denoising loop: one or two prompts, or one per row of the guidance batch. */
const rowsHidden: IoContract = { ...hidden, batched: true };
const residuals: IoContract[] = CONTROL_RESIDUALS.map((r) => ({ role: r.role, types: FLOATS, ranks: [4], dims: { 1: [r.channels] }, sized: true, batched: true }));
/** A full LCM checkpoint's guidance embedding [B, time_cond_proj_dim] (lcm-guidance.ts); LCM-LoRA and plain UNets have none. */
const timestepCond: IoContract = { role: 'timestep_cond', types: FLOATS, ranks: [2], optional: true };

export const ROLE_CONTRACTS: Readonly<Record<GraphRole, RoleContract>> = {
  text_encoder: {
    inputs: [{ role: 'input_ids', types: IDS, ranks: [2], dims: { 1: [77] } }],
    outputs: [{ role: 'last_hidden_state', types: FLOATS, ranks: [3] }],
  },
  unet: { inputs: [rowsLatent('sample', [4]), timestep, rowsHidden, ...residuals, timestepCond], outputs: [rowsLatent('out_sample', [4])] },
  // Outpainting feeds these three only: an inpainting UNet with any other input (a full LCM
  // checkpoint's timestep_cond) is refused at start naming it (export matrix: lcm-unet-inpaint).
  unet_inpaint: { inputs: [rowsLatent('sample', [9]), timestep, rowsHidden], outputs: [rowsLatent('out_sample', [4])] },
  controlnet: {
    inputs: [
      rowsLatent('sample', [4]),
      timestep,
      rowsHidden,
      canvas('controlnet_cond'),
      // Optional so a ControlNet exported without one (OnnxStack/Amuse trace it as a constant)
      // reaches the pair check (seams.ts), which refuses it naming the fix.
      { role: 'conditioning_scale', types: SCALES, ranks: [0, 1], optional: true },
    ],
    outputs: residuals,
  },
  /**
   * UNet + ControlNet in one graph (pipeline/denoisers.ts): one call per denoising step. The
   * control image is RGB in [0,1] (float) or 0..255 (uint8); with a `guidance_scale` input the
   * graph also does classifier-free guidance: `sample` holds the B images, encoder_hidden_states
   * the text rows ([uncond, cond], or [cond] alone), controlnet_cond one image for the batch when
   * its first axis is fixed at 1, and noise_pred the B guided predictions. Without it, everything
   * is the 2B-row CFG batch, as diffusers' fused export (and NVIDIA's TensorRT demo's) takes it:
   * those also put a leading ControlNet axis on the control image ([1, 2B, 3, H, W]) and the
   * scale ([1] or [1, 1]); one ControlNet is fed.
   */
  denoiser: {
    inputs: [
      rowsLatent('sample', [4]),
      timestep,
      rowsHidden,
      { role: 'controlnet_cond', types: [...FLOATS, 'uint8'], ranks: [4, 5], sized: true },
      { role: 'conditioning_scale', types: SCALES, ranks: [0, 1, 2] },
      { role: 'guidance_scale', types: SCALES, ranks: [0, 1], optional: true },
      timestepCond,
    ],
    outputs: [rowsLatent('noise_pred', [4])],
  },
  vae_decoder: { inputs: [latent('latent_sample', [4])], outputs: [canvas('sample')] },
  // The fallback for an fp16 decoder that overflows: float32 through and through, or it would overflow the same way.
  vae_decoder_fp32: {
    inputs: [{ ...latent('latent_sample', [4]), types: ['float32'] }],
    outputs: [{ ...canvas('sample'), types: ['float32'] }],
  },
  // Older optimum exports give `latent_sample` (4 ch), newer ones `latent_parameters` (mean ‖ logvar, 8 ch).
  vae_encoder: { inputs: [canvas('sample')], outputs: [latent('latent_sample', [4, 8])] },
  safety_checker: {
    inputs: [image('clip_input'), { role: 'images', types: FLOATS, ranks: [4], dims: { 3: [3] }, optional: true }],
    outputs: [{ role: 'has_nsfw_concepts', types: ['bool'], ranks: [1] }],
  },
  // OnnxStack's content filter: the safety checker's CLIP scores before its last comparison,
  // [B, 17] (nsfw-content-filter.ts); fp16 in and out in its optimized export.
  content_filter: { inputs: [image('clip_input')], outputs: [{ role: 'concept_scores', types: FLOATS, ranks: [2] }] },
  // An image classifier (optimum image-classification export): logits [B, labels] (nsfw-classifier.ts).
  nsfw_classifier: { inputs: [image('pixel_values')], outputs: [{ role: 'logits', types: FLOATS, ranks: [2] }] },
  captioner_encoder: { inputs: [image('pixel_values')], outputs: [{ role: 'last_hidden_state', types: FLOATS, ranks: [3] }] },
  captioner_decoder: {
    inputs: [
      { role: 'input_ids', types: IDS, ranks: [2] },
      hidden,
      { role: 'attention_mask', types: IDS, ranks: [2], optional: true },
      { role: 'encoder_attention_mask', types: IDS, ranks: [2], optional: true },
    ],
    outputs: [{ role: 'logits', types: FLOATS, ranks: [3] }],
  },
  /**
   * UltraFace (ONNX model zoo version-RFB-320/640, face-detect.ts): RGB [1,3,H,W] in (v-127)/128
   * → per prior box softmax `scores` [1,N,2] (background, face) and `boxes` [1,N,4], corners
   * x1,y1,x2,y2 as fractions of the input's width and height.
   */
  face_detector: {
    inputs: [image('input')],
    outputs: [
      { role: 'scores', types: FLOATS, ranks: [3], dims: { 2: [2] } },
      { role: 'boxes', types: FLOATS, ranks: [3], dims: { 2: [4] } },
    ],
  },
};
