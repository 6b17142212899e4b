/**
 * Our own graphs: what `qr-art models fuse` writes (src/onnx/fuse.ts, both guidance layouts), the
 * 13-residual ControlNet + ControlNet-ready UNet pair with a conditioning_scale input as
 * docs/models.md §2.2's script exports it (OnnxStack/Amuse's layout; the pair without the scale
 * input is in seams.ts), and the demo graphs of scripts/demo-models (models/demo) the shipped
 * manifest serves. Verified against this repository's src/onnx/fuse.ts and the builders scripts/demo-models/build.ts lists.
 */
import { CONTROL_RESIDUALS } from '../../onnx/control-residuals.ts';
import type { ExportContract } from './contract.ts';
import { F32, FLOAT, graphMatches, IDS, TIMESTEP, type IoPattern } from './match.ts';

const residuals = (types: readonly string[]): IoPattern[] => CONTROL_RESIDUALS.map((r) => ({ name: r.role, types, dims: ['*', r.channels, '*', '*'] }));
const unetCore: IoPattern[] = [
  { name: 'sample', types: FLOAT, dims: ['*', 4, '*', '*'] },
  { name: 'timestep', types: TIMESTEP },
  { name: 'encoder_hidden_states', types: FLOAT, dims: ['*', '*', '*'] },
];

export const ROWS: ExportContract[] = [
  {
    id: 'qr-art-fused-denoiser',
    exporter: 'qr-art',
    graph: 'denoiser/model.onnx (`qr-art models fuse`, CFG inside)',
    role: 'denoiser',
    verdict: 'serves',
    how: 'one call per step: B latents, the text rows [uncond, cond], the control image once as uint8, conditioning_scale (0 outside the control window) and guidance_scale',
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'sample', types: F32, dims: ['batch', 4, 'height', 'width'] },
          { name: 'timestep', types: TIMESTEP },
          { name: 'encoder_hidden_states', types: F32, dims: ['text_rows', 'sequence', '*'] },
          { name: 'controlnet_cond', types: ['uint8'], dims: [1, 3, 'image_height', 'image_width'] },
          { name: 'conditioning_scale', types: F32, dims: [] },
          { name: 'guidance_scale', types: F32, dims: [] },
        ],
        outputs: [{ name: 'noise_pred', types: F32 }],
      }),
  },
  {
    id: 'qr-art-fused-denoiser-guidance-outside',
    exporter: 'qr-art',
    graph: 'denoiser/model.onnx (`qr-art models fuse --guidance outside`, 2B rows)',
    role: 'denoiser',
    verdict: 'adapts',
    how: "diffusers' fused layout under our names: the worker feeds the 2B-row CFG batch, the control image behind a leading ControlNet axis, the scale as [1, 1], and does the guidance itself",
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'sample', types: F32, dims: ['batch', 4, 'height', 'width'] },
          { name: 'timestep', types: TIMESTEP },
          { name: 'encoder_hidden_states', types: F32, dims: ['batch', 'sequence', '*'] },
          { name: 'controlnet_cond', types: F32, dims: [1, 'batch', 3, 'image_height', 'image_width'] },
          { name: 'conditioning_scale', types: F32, dims: [1, 1] },
        ],
        outputs: [{ name: 'noise_pred', types: F32 }],
      }),
  },
  {
    id: 'qr-art-controlnet-with-scale',
    exporter: 'qr-art (docs §2.2 script)',
    graph: 'controlnet/model.onnx (13 residuals, conditioning_scale input)',
    role: 'controlnet',
    verdict: 'serves',
    how: 'as the separate pair with the ControlNet-ready UNet (two calls per step, CFG by the worker), or fused into one denoiser by `qr-art models fuse` (§2.5, recommended)',
    matches: (f) =>
      graphMatches(f, {
        inputs: [...unetCore, { name: 'controlnet_cond', types: FLOAT, dims: ['*', 3, '*', '*'] }, { name: 'conditioning_scale', types: ['float64', 'float32', 'float16'] }],
        outputs: residuals(FLOAT),
      }),
  },
  {
    id: 'qr-art-unet-13-residuals',
    exporter: 'qr-art (docs §2.2 script)',
    graph: 'unet/model.onnx (ControlNet-ready: 13 residual inputs)',
    role: 'unet',
    verdict: 'serves',
    how: 'with a 13-residual ControlNet as the separate pair (also with the manifest\'s extra controlnets), or fused by `qr-art models fuse`',
    matches: (f) => graphMatches(f, { inputs: [...unetCore, ...residuals(FLOAT)], outputs: [{ name: 'out_sample', types: FLOAT, dims: ['*', 4, '*', '*'] }] }),
  },
  {
    id: 'qr-art-demo-text-encoder',
    exporter: 'qr-art (demo)',
    graph: 'demo/text_encoder/model.onnx (with hidden_states.N)',
    role: 'text_encoder',
    verdict: 'serves',
    how: 'input_ids int64 [batch, 77]; last_hidden_state read (hidden_states.N for clipSkip above 1)',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'input_ids', types: IDS, dims: ['batch', 77] }],
        outputs: [{ name: 'last_hidden_state', types: FLOAT, dims: ['batch', 77, '*'] }],
      }),
  },
  {
    id: 'qr-art-demo-vae-decoder',
    exporter: 'qr-art (demo)',
    graph: 'demo/vae_decoder/model.onnx',
    role: 'vae_decoder',
    verdict: 'serves',
    how: 'latent_sample [batch, 4, height, width] in, sample out',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'latent_sample', types: FLOAT, dims: ['batch', 4, 'height', 'width'] }],
        outputs: [{ name: 'sample', types: FLOAT, dims: ['batch', 3, 'image_height', 'image_width'] }],
      }),
  },
  {
    id: 'qr-art-demo-unet-inpaint',
    exporter: 'qr-art (demo)',
    graph: 'demo/unet_inpaint/model.onnx (9-channel sample)',
    role: 'unet_inpaint',
    verdict: 'serves',
    how: 'outpainting: sample = latents ‖ mask ‖ masked-image latents (9 channels), no ControlNet',
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'sample', types: FLOAT, dims: ['*', 9, '*', '*'] },
          { name: 'timestep', types: TIMESTEP },
          { name: 'encoder_hidden_states', types: FLOAT, dims: ['*', '*', '*'] },
        ],
        outputs: [{ name: 'out_sample', types: FLOAT, dims: ['*', 4, '*', '*'] }],
      }),
  },
  {
    id: 'qr-art-demo-captioner-encoder',
    exporter: 'qr-art (demo)',
    graph: 'demo/captioner/encoder_model.onnx (fixed 224 px)',
    role: 'captioner_encoder',
    verdict: 'serves',
    how: 'pixel_values at the graph\'s fixed size, last_hidden_state to the decoder',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'pixel_values', types: FLOAT, dims: ['batch', 3, '*', '*'] }],
        outputs: [{ name: 'last_hidden_state', types: FLOAT, dims: ['batch', '*', '*'] }],
      }),
  },
  {
    id: 'qr-art-demo-captioner-decoder',
    exporter: 'qr-art (demo)',
    graph: 'demo/captioner/decoder_model.onnx',
    role: 'captioner_decoder',
    verdict: 'serves',
    how: 'input_ids and encoder_hidden_states in, logits out, no cache (as optimum\'s decoder_model.onnx)',
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'input_ids', types: IDS, dims: ['batch', 'sequence'] },
          { name: 'encoder_hidden_states', types: FLOAT, dims: ['batch', '*', '*'] },
        ],
        outputs: [{ name: 'logits', types: FLOAT, dims: ['batch', 'sequence', '*'] }],
      }),
  },
];
