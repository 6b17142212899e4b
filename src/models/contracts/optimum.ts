/**
 * optimum's Stable Diffusion 1.5 export (`optimum-cli export onnx --model <sd15> [--dtype fp16]`),
 * graph by graph, fp32 and fp16. Verified against huggingface/optimum-onnx
 * optimum/exporters/onnx/model_configs.py (CLIPTextOnnxConfig, UNetOnnxConfig, VaeDecoderOnnxConfig;
 * commit 1939f27, 2026-04) and optimum/utils/input_generators.py (DummyTimestepInputGenerator:
 * the timestep is a float scalar in the export's float dtype; that file lives in
 * huggingface/optimum, which optimum-onnx imports it from). `--dtype fp16` makes every float input
 * and output float16; input_ids stay integers. optimum's VAE encoder (latent_parameters) is in
 * seams.ts.
 *
 * Older releases wrote other names and dtypes, and each row accepts them too (optimum history):
 *   - input_ids int32 up to 1.23 (CLIPTextOnnxConfig cast its dummy input), int64 since 1.24;
 *   - the UNet's timestep int64 [steps] up to 1.23, a float scalar since 1.24 (huggingface/optimum#2073);
 *   - the VAE decoder's latent axes height_latent / width_latent up to 1.25, latent_height /
 *     latent_width since 1.26 (huggingface/optimum#2234);
 *   - a UNet of a full LCM checkpoint has a timestep_cond input besides (UNetOnnxConfig, when
 *     time_cond_proj_dim is set): refused like the others, for the same reason.
 * optimum writes hidden_states.N only for SDXL and SD3 text encoders; an SD1.5 export has none,
 * which is what clipSkip above 1 needs (docs/models.md §2.1 exports them).
 */
import type { ExportContract } from './contract.ts';
import { F16, F32, graphMatches, IDS, type IoPattern } from './match.ts';

const hidden = (n: number) => (name: string) => name === `hidden_states.${n}` || /^hidden_states\.\d+$/.test(name);

function textEncoder(dtype: 'fp32' | 'fp16'): ExportContract {
  const t = dtype === 'fp32' ? F32 : F16;
  return {
    id: `optimum-${dtype}-text-encoder`,
    exporter: 'optimum',
    graph: `text_encoder/model.onnx (${dtype})`,
    role: 'text_encoder',
    verdict: 'serves',
    how: `input_ids (int32 up to optimum 1.23, int64 since; [batch_size, sequence_length]) padded to 77; last_hidden_state read${dtype === 'fp16' ? ' as float16 and widened' : ''}; pooler_output unused. No hidden_states.N for SD1.5, so clipSkip above 1 needs the §2.1 export`,
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'input_ids', types: IDS, dims: ['batch_size', 'sequence_length'] }],
        outputs: [
          { name: 'last_hidden_state', types: t, dims: ['batch_size', 'sequence_length', '*'] },
          { name: 'pooler_output', types: t, dims: ['batch_size', '*'] },
        ],
        otherOutputs: hidden(0),
      }),
  };
}

function unet(dtype: 'fp32' | 'fp16'): ExportContract {
  const t = dtype === 'fp32' ? F32 : F16;
  const others: IoPattern[] = [
    { name: 'sample', types: t, dims: ['batch_size', '*', 'height', 'width'] },
    { name: 'encoder_hidden_states', types: t, dims: ['batch_size', 'sequence_length', '*'] },
  ];
  // Since optimum 1.24 a float scalar in the export's dtype; up to 1.23 int64 [steps].
  const timesteps: IoPattern[] = [
    { name: 'timestep', types: t, dims: [] },
    { name: 'timestep', types: ['int64'], dims: ['steps'] },
  ];
  const outputs: IoPattern[] = [{ name: 'out_sample', types: t, dims: ['batch_size', '*', 'height', 'width'] }];
  // A full LCM checkpoint's UNet also takes timestep_cond (the guidance embedding).
  const otherInputs = (name: string) => name === 'timestep_cond';
  return {
    id: `optimum-${dtype}-unet`,
    exporter: 'optimum',
    graph: `unet/model.onnx (${dtype}; also a full LCM checkpoint's, with timestep_cond)`,
    role: 'unet',
    verdict: 'refuses',
    how: 'the UNet has no ControlNet residual inputs (down_block_N / mid_block additional residuals), so no QR ControlNet can steer it: export the ControlNet-ready UNet with docs/models.md §2.2 and fuse it with its ControlNet (§2.5)',
    refusal: 'docs/models.md §2.2',
    matches: (f) => timesteps.some((ts) => graphMatches(f, { inputs: [...others, ts], outputs, otherInputs })),
  };
}

function vaeDecoder(dtype: 'fp32' | 'fp16'): ExportContract {
  const t = dtype === 'fp32' ? F32 : F16;
  // latent_height / latent_width since optimum 1.26; height_latent / width_latent before.
  const axes = [
    ['latent_height', 'latent_width'],
    ['height_latent', 'width_latent'],
  ] as const;
  return {
    id: `optimum-${dtype}-vae-decoder`,
    exporter: 'optimum',
    graph: `vae_decoder/model.onnx (${dtype})`,
    role: 'vae_decoder',
    verdict: 'serves',
    how: `latent_sample [batch_size, 4, latent_height, latent_width] (height_latent, width_latent up to optimum 1.25) in, sample out${dtype === 'fp16' ? ' (float16; list an fp32 decoder as vae_decoder_fp32 for decodes that overflow)' : ''}`,
    matches: (f) =>
      axes.some(([h, w]) =>
        graphMatches(f, {
          inputs: [{ name: 'latent_sample', types: t, dims: ['batch_size', '*', h, w] }],
          outputs: [{ name: 'sample', types: t, dims: ['batch_size', '*', '?', '?'] }],
        }),
      ),
  };
}

export const ROWS: ExportContract[] = (['fp32', 'fp16'] as const).flatMap((d) => [textEncoder(d), unet(d), vaeDecoder(d)]);
