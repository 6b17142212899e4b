/**
 * Fixtures of optimum's SD1.5 export (src/models/contracts/optimum.ts): the demo text encoder and
 * VAE decoder under optimum's names and axes (fp16: float16 IO around the unchanged body, as an
 * `--dtype fp16` export looks from outside), and a stand-in for its UNet, which has no ControlNet
 * residual inputs and is refused.
 */
import { ROWS as CONTRACTS } from '../../../src/models/contracts/optimum.ts';
import type { ExportRow } from './row.ts';
import { demoGraph, keepOutputs, separatePair, setDims, standIn, withHalfIo, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;
type Dtype = 'fp32' | 'fp16';
const half = <T extends Parameters<typeof withHalfIo>[0]>(m: T, dtype: Dtype) => (dtype === 'fp16' ? withHalfIo(m) : m);

async function textEncoder(dtype: Dtype) {
  const m = await demoGraph('text_encoder/model.onnx');
  keepOutputs(m, (n) => n === 'last_hidden_state' || n === 'pooler_output');
  setDims(m, 'input_ids', ['batch_size', 'sequence_length']);
  setDims(m, 'last_hidden_state', ['batch_size', 'sequence_length', 768]);
  setDims(m, 'pooler_output', ['batch_size', 768]);
  return half(m, dtype);
}

async function vaeDecoder(dtype: Dtype) {
  const m = await demoGraph('vae_decoder/model.onnx');
  setDims(m, 'latent_sample', ['batch_size', 4, 'latent_height', 'latent_width']);
  setDims(m, 'sample', ['batch_size', 3, 'latent_height * 8', 'latent_width * 8']);
  return half(m, dtype);
}

function unet(dtype: Dtype): Uint8Array {
  const t = dtype === 'fp32' ? 'float32' : 'float16';
  return standIn(
    `optimum ${dtype} unet (no ControlNet inputs)`,
    [
      { name: 'sample', dtype: t, dims: ['batch_size', 4, 'height', 'width'] },
      { name: 'timestep', dtype: t, dims: [] },
      { name: 'encoder_hidden_states', dtype: t, dims: ['batch_size', 'sequence_length', 768] },
    ],
    [{ name: 'out_sample', dtype: t, dims: ['batch_size', 4, 'height', 'width'] }],
  );
}

export const ROWS: ExportRow[] = (['fp32', 'fp16'] as const).flatMap((dtype): ExportRow[] => [
  {
    contract: contract(`optimum-${dtype}-text-encoder`),
    async build(dir) {
      const file = await writeGraph(dir, 'text_encoder/model.onnx', await textEncoder(dtype));
      return writeFixtureManifest(dir, (g) => (g.text_encoder = { path: file }));
    },
  },
  {
    contract: contract(`optimum-${dtype}-unet`),
    async build(dir) {
      const file = await writeGraph(dir, 'unet/model.onnx', unet(dtype));
      return writeFixtureManifest(dir, (g) => separatePair(g, { unet: { path: file } }));
    },
  },
  {
    contract: contract(`optimum-${dtype}-vae-decoder`),
    async build(dir) {
      const file = await writeGraph(dir, 'vae_decoder/model.onnx', await vaeDecoder(dtype));
      return writeFixtureManifest(dir, (g) => (g.vae_decoder = { path: file }));
    },
  },
]);
