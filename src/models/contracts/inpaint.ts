/**
 * Inpainting UNets beyond the demo's (qr-art.ts): the unet_inpaint role feeds sample (latents ‖
 * mask ‖ masked-image latents, 9 channels), timestep and encoder_hidden_states, nothing else
 * (roles.ts), and a graph with another input is refused at start naming it.
 *
 * The export that has one: a full LCM inpainting checkpoint (a UNet2DConditionModel with 9 input
 * channels and time_cond_proj_dim set) exported by optimum gets a `timestep_cond` [batch_size,
 * time_cond_proj_dim] input, as every full LCM UNet does (huggingface/optimum-onnx
 * optimum/exporters/onnx/model_configs.py UNetOnnxConfig, in huggingface/optimum up to 1.27:
 * timestep_cond when the config has time_cond_proj_dim; huggingface/optimum
 * optimum/utils/input_generators.py DummyTimestepInputGenerator). Outpainting
 * runs plain SD inpainting with classifier-free guidance; it does not feed the guidance embedding.
 */
import type { ExportContract } from './contract.ts';
import { FLOAT, graphMatches, TIMESTEP } from './match.ts';

export const ROWS: ExportContract[] = [
  {
    id: 'lcm-unet-inpaint',
    exporter: 'optimum (full LCM inpainting checkpoint)',
    graph: 'unet/model.onnx: 9-channel sample and timestep_cond [batch, 256], as unet_inpaint',
    role: 'unet_inpaint',
    verdict: 'refuses',
    how: 'outpainting does not feed timestep_cond (it runs plain inpainting with classifier-free guidance): list an SD1.5 inpainting UNet as unet_inpaint (an LCM-LoRA fused into its weights has no extra input)',
    refusal: "input 'timestep_cond' is not fed by the unet_inpaint role",
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'sample', types: FLOAT, dims: ['*', 9, '*', '*'] },
          { name: 'timestep', types: TIMESTEP },
          { name: 'encoder_hidden_states', types: FLOAT, dims: ['*', '*', '*'] },
          { name: 'timestep_cond', types: FLOAT, dims: ['*', '*'] },
        ],
        outputs: [{ name: 'out_sample', types: FLOAT, dims: ['*', 4, '*', '*'] }],
      }),
  },
];
