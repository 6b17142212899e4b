/**
 * Fixtures of diffusers' ONNX scripts (src/models/contracts/diffusers.ts): the demo text encoder
 * and VAE decoder under the scripts' names and axes, the demo pair fused in diffusers' 2B-row
 * layout (`fuseControlNet` with guidance outside, then renamed to controlnet_conds /
 * conditioning_scales), and a stand-in for the checkpoint script's UNet, which is refused.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/diffusers.ts';
import { fuseControlNet } from '../../../src/onnx/fuse.ts';
import { decodeModel } from '../../../src/onnx/proto.ts';
import type { ExportRow } from './row.ts';
import { DEMO_DIR, demoGraph, keepOutputs, renameValue, retypeInput, separatePair, setDims, standIn, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;

async function fusedTwoRows() {
  const read = async (p: string) => ({ model: decodeModel(await readFile(join(DEMO_DIR, p))), file: join(DEMO_DIR, p) });
  const m = fuseControlNet(await read('controlnet/model.onnx'), await read('unet/model.onnx'), { guidance: 'outside' });
  renameValue(m, 'controlnet_cond', 'controlnet_conds');
  renameValue(m, 'conditioning_scale', 'conditioning_scales');
  setDims(m, 'sample', ['2B', 4, 'H', 'W']);
  setDims(m, 'timestep', [1]);
  setDims(m, 'encoder_hidden_states', ['2B', 77, 768]);
  setDims(m, 'controlnet_conds', [1, '2B', 3, '8H', '8W']);
  setDims(m, 'noise_pred', ['2B', 4, 'H', 'W']);
  return m;
}

export const ROWS: ExportRow[] = [
  {
    contract: contract('diffusers-text-encoder'),
    async build(dir) {
      const m = await demoGraph('text_encoder/model.onnx');
      keepOutputs(m, (n) => n === 'last_hidden_state' || n === 'pooler_output');
      // The script traces input_ids as int32 (`dtype=torch.int32`).
      retypeInput(m, 'input_ids', 'int32', ['batch', 'sequence']);
      // Output axes as torch's exporter names them when the script gives no names (last_hidden_state's
      // seen on a tiny export at opset 14; pooler_output's made up in the same form, unchecked).
      setDims(m, 'last_hidden_state', ['Addlast_hidden_state_dim_0', 'Addlast_hidden_state_dim_1', 768]);
      setDims(m, 'pooler_output', ['Gatherpooler_output_dim_0', 768]);
      const file = await writeGraph(dir, 'text_encoder/model.onnx', m);
      return writeFixtureManifest(dir, (gr) => (gr.text_encoder = { path: file }));
    },
  },
  {
    contract: contract('diffusers-unet'),
    async build(dir) {
      const t = 'float32';
      const file = await writeGraph(
        dir,
        'unet/model.onnx',
        standIn(
          'diffusers checkpoint unet (no ControlNet inputs)',
          [
            { name: 'sample', dtype: t, dims: ['batch', 'channels', 'height', 'width'] },
            { name: 'timestep', dtype: t, dims: ['batch'] },
            { name: 'encoder_hidden_states', dtype: t, dims: ['batch', 'sequence', 768] },
          ],
          [{ name: 'out_sample', dtype: t, dims: ['batch', 4, 'height', 'width'] }],
        ),
      );
      return writeFixtureManifest(dir, (g) => separatePair(g, { unet: { path: file } }));
    },
  },
  {
    contract: contract('diffusers-fused-controlnet-unet'),
    async build(dir) {
      const file = await writeGraph(dir, 'unet/model.onnx', await fusedTwoRows());
      return writeFixtureManifest(dir, (g) => {
        g.denoiser = { path: file, inputs: { controlnet_cond: 'controlnet_conds', conditioning_scale: 'conditioning_scales' } };
      });
    },
  },
  {
    contract: contract('diffusers-vae-decoder'),
    async build(dir) {
      const m = await demoGraph('vae_decoder/model.onnx');
      setDims(m, 'latent_sample', ['batch', 'channels', 'height', 'width']);
      const file = await writeGraph(dir, 'vae_decoder/model.onnx', m);
      return writeFixtureManifest(dir, (g) => (g.vae_decoder = { path: file }));
    },
  },
];
