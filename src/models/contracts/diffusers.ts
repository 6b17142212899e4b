/**
 * diffusers' own ONNX scripts (fp32, or fp16 with --fp16: every float input and output float16).
 * Verified against huggingface/diffusers (commit 58eb52c, 2026-08):
 * scripts/convert_stable_diffusion_checkpoint_to_onnx.py (text_encoder: input_ids int32
 * [batch, sequence] → last_hidden_state, pooler_output; unet: sample, timestep [batch],
 * encoder_hidden_states → out_sample, no ControlNet inputs; vae_decoder: latent_sample
 * [batch, channels, height, width] → sample) and scripts/convert_stable_diffusion_controlnet_to_onnx.py
 * (UNet2DConditionControlNetModel: the UNet and its ControlNets in one graph, 2B rows:
 * sample [2B, 4, H, W], timestep [1], encoder_hidden_states [2B, 77, 768],
 * controlnet_conds [n_controlnets, 2B, 3, 8H, 8W], conditioning_scales [n_controlnets, 1] →
 * noise_pred). Its VAE encoder (a sampling latent_sample) and safety checker are in seams.ts and nsfw.ts.
 * The scripts name the axes of inputs only (dynamic_axes); output axes get names torch's
 * TorchScript exporter makes up (`<Op><output>_dim_<i>`), so rows do not match output axis names.
 * Checked by exporting tiny random-weight models with the scripts' own export calls (torch 2.13,
 * dynamo=False).
 */
import type { ExportContract } from './contract.ts';
import { FLOAT, graphMatches } from './match.ts';

export const ROWS: ExportContract[] = [
  {
    id: 'diffusers-text-encoder',
    exporter: 'diffusers',
    graph: 'text_encoder/model.onnx (convert_stable_diffusion_*_to_onnx.py)',
    role: 'text_encoder',
    verdict: 'serves',
    how: 'input_ids int32 [batch, sequence] padded to 77; last_hidden_state read, pooler_output unused',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'input_ids', types: ['int32'], dims: ['batch', 'sequence'] }],
        outputs: [
          // The script names no output axes: torch's exporter makes up their names (e.g. Addlast_hidden_state_dim_0).
          { name: 'last_hidden_state', types: FLOAT, dims: ['?', '?', '*'] },
          { name: 'pooler_output', types: FLOAT },
        ],
        otherOutputs: () => false,
      }),
  },
  {
    id: 'diffusers-unet',
    exporter: 'diffusers',
    graph: 'unet/model.onnx (convert_stable_diffusion_checkpoint_to_onnx.py)',
    role: 'unet',
    verdict: 'refuses',
    how: 'the UNet has no ControlNet residual inputs, so no QR ControlNet can steer it: export the ControlNet-ready UNet with docs/models.md §2.2 (or use the controlnet script\'s fused unet, next row)',
    refusal: 'docs/models.md §2.2',
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'sample', types: FLOAT, dims: ['batch', 'channels', 'height', 'width'] },
          { name: 'timestep', types: FLOAT, dims: ['batch'] },
          { name: 'encoder_hidden_states', types: FLOAT, dims: ['batch', 'sequence', '*'] },
        ],
        outputs: [{ name: 'out_sample', types: FLOAT }],
      }),
  },
  {
    id: 'diffusers-fused-controlnet-unet',
    exporter: 'diffusers',
    graph: 'unet/model.onnx (convert_stable_diffusion_controlnet_to_onnx.py: UNet + ControlNet, 2B rows)',
    role: 'denoiser',
    verdict: 'adapts',
    how: 'as the denoiser with inputs mapped (controlnet_cond: controlnet_conds, conditioning_scale: conditioning_scales); the worker feeds the 2B-row CFG batch (uncond ‖ cond), the control image once per row behind the leading ControlNet axis, and does the guidance itself; exports of one ControlNet only',
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'sample', types: FLOAT, dims: ['2B', '*', 'H', 'W'] },
          { name: 'timestep', types: FLOAT, dims: [1] },
          { name: 'encoder_hidden_states', types: FLOAT, dims: ['2B', '*', '*'] },
          { name: 'controlnet_conds', types: FLOAT, dims: [1, '2B', '*', '8H', '8W'] },
          { name: 'conditioning_scales', types: FLOAT, dims: [1, 1] },
        ],
        outputs: [{ name: 'noise_pred', types: FLOAT }],
      }),
  },
  {
    id: 'diffusers-vae-decoder',
    exporter: 'diffusers',
    graph: 'vae_decoder/model.onnx (convert_stable_diffusion_*_to_onnx.py)',
    role: 'vae_decoder',
    verdict: 'serves',
    how: 'latent_sample [batch, channels, height, width] in (4 channels fed), sample out',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'latent_sample', types: FLOAT, dims: ['batch', 'channels', 'height', 'width'] }],
        outputs: [{ name: 'sample', types: FLOAT }],
      }),
  },
];
