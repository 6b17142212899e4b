/**
 * optimum's Stable Diffusion 1.5 export (`optimum-cli export onnx --model <sd15> [--dtype fp16]`),
 * graph by graph, fp32 and fp16. Verified against huggingface/optimum-onnx
 * optimum/exporters/onnx/model_configs.py (CLIPTextOnnxConfig, UNetOnnxConfig, VaeDecoderOnnxConfig;
 * commit 1939f27, 2026-04) and optimum/utils/input_generators.py (DummyTimestepInputGenerator:
 * the timestep is a float scalar in the export's float dtype). `--dtype fp16` makes every float
 * input and output float16; input_ids stay integers. optimum's VAE encoder (latent_parameters)
 * is in seams.ts.
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
    how: `input_ids (int, [batch_size, sequence_length]) padded to 77; last_hidden_state read${dtype === 'fp16' ? ' as float16 and widened' : ''}; pooler_output (and hidden_states.N, exported with output_hidden_states for clipSkip) unused`,
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
  const inputs: IoPattern[] = [
    { name: 'sample', types: t, dims: ['batch_size', '*', 'height', 'width'] },
    { name: 'timestep', types: t, dims: [] },
    { name: 'encoder_hidden_states', types: t, dims: ['batch_size', 'sequence_length', '*'] },
  ];
  return {
    id: `optimum-${dtype}-unet`,
    exporter: 'optimum',
    graph: `unet/model.onnx (${dtype})`,
    role: 'unet',
    verdict: 'refuses',
    how: 'the UNet has no ControlNet residual inputs (down_block_N / mid_block additional residuals), so no QR ControlNet can steer it: export the ControlNet-ready UNet with docs/models.md §2.2 and fuse it with its ControlNet (§2.5)',
    refusal: 'docs/models.md §2.2',
    matches: (f) => graphMatches(f, { inputs, outputs: [{ name: 'out_sample', types: t, dims: ['batch_size', '*', 'height', 'width'] }] }),
  };
}

function vaeDecoder(dtype: 'fp32' | 'fp16'): ExportContract {
  const t = dtype === 'fp32' ? F32 : F16;
  return {
    id: `optimum-${dtype}-vae-decoder`,
    exporter: 'optimum',
    graph: `vae_decoder/model.onnx (${dtype})`,
    role: 'vae_decoder',
    verdict: 'serves',
    how: `latent_sample [batch_size, 4, latent_height, latent_width] in, sample out${dtype === 'fp16' ? ' (float16; list an fp32 decoder as vae_decoder_fp32 for decodes that overflow)' : ''}`,
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'latent_sample', types: t, dims: ['batch_size', '*', 'latent_height', 'latent_width'] }],
        outputs: [{ name: 'sample', types: t, dims: ['batch_size', '*', '?', '?'] }],
      }),
  };
}

export const ROWS: ExportContract[] = (['fp32', 'fp16'] as const).flatMap((d) => [textEncoder(d), unet(d), vaeDecoder(d)]);
