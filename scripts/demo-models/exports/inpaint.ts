/**
 * Fixture of the inpainting-UNet rows (src/models/contracts/inpaint.ts): the demo inpainting UNet
 * with a full LCM checkpoint's `timestep_cond` [batch_size, 256] input declared beside its own,
 * as optimum writes it for a UNet with time_cond_proj_dim (the demo body does not read it).
 */
import { ROWS as CONTRACTS } from '../../../src/models/contracts/inpaint.ts';
import type { ExportRow } from './row.ts';
import { addInputs, demoGraph, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;

export const ROWS: ExportRow[] = [
  {
    contract: contract('lcm-unet-inpaint'),
    async build(dir) {
      const m = addInputs(await demoGraph('unet_inpaint/model.onnx'), [{ name: 'timestep_cond', type: 'float32', dims: ['batch_size', 256] }]);
      const file = await writeGraph(dir, 'unet_inpaint/model.onnx', m);
      return writeFixtureManifest(dir, (g) => (g.unet_inpaint = { path: file }));
    },
  },
];
