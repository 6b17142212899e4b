/**
 * Fixtures of the LCM contracts (src/models/contracts/lcm.ts). The full LCM UNet is the demo
 * ControlNet-ready UNet with a `timestep_cond` [batch, 256] input it really reads: its output gains
 * LCM_COND_GAIN × mean(timestep_cond) per row, so a test can see the guidance embedding arrive
 * (the embedding's mean depends on the guidance).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseControlNet } from '../../../src/onnx/fuse.ts';
import { decodeModel, encodeModel, node, tensor, valueInfo, type ModelProto } from '../../../src/onnx/proto.ts';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/lcm.ts';
import { useSeparatePair, writeManifestVariant } from '../manifest-variants.ts';
import type { ExportRow } from './row.ts';

const DEMO = fileURLToPath(new URL('../../../models/demo/', import.meta.url));
/** LCM_Dreamshaper_v7's time_cond_proj_dim. */
export const LCM_COND_DIM = 256;
/** What the fixture UNet adds to its prediction per unit of timestep_cond's row mean. */
export const LCM_COND_GAIN = 0.05;

const readDemo = async (graph: 'unet' | 'controlnet'): Promise<ModelProto> => decodeModel(await readFile(join(DEMO, graph, 'model.onnx')));

/** The demo UNet plus a timestep_cond input that shifts out_sample by LCM_COND_GAIN × its row mean. */
export function withTimestepCond(unet: ModelProto, options: { dim?: number } = {}): ModelProto {
  const g = unet.graph!;
  const raw = 'lcm/out_sample_raw';
  for (const n of g.node) n.output = n.output.map((o) => (o === 'out_sample' ? raw : o));
  g.input.push(valueInfo('timestep_cond', 'float32', ['batch', options.dim ?? LCM_COND_DIM]));
  g.initializer.push(tensor('lcm/axes', 'int64', [2], [2, 3]), tensor('lcm/gain', 'float32', [], [LCM_COND_GAIN]));
  g.node.push(
    node('ReduceMean', ['timestep_cond'], ['lcm/mean'], { axes: [1], keepdims: 1 }, 'lcm/mean'),
    node('Unsqueeze', ['lcm/mean', 'lcm/axes'], ['lcm/mean4'], {}, 'lcm/mean4'),
    node('Mul', ['lcm/mean4', 'lcm/gain'], ['lcm/shift'], {}, 'lcm/shift'),
    node('Add', [raw, 'lcm/shift'], ['out_sample'], {}, 'lcm/out_sample'),
  );
  return unet;
}

/** Writes <dir>/unet/model.onnx: the full LCM fixture UNet. */
export async function writeLcmUnet(dir: string): Promise<string> {
  const path = join(dir, 'unet', 'model.onnx');
  await mkdir(join(dir, 'unet'), { recursive: true });
  await writeFile(path, encodeModel(withTimestepCond(await readDemo('unet'))));
  return path;
}

/** Writes <dir>/denoiser/model.onnx: the demo ControlNet fused with the full LCM fixture UNet. */
export async function writeLcmFused(dir: string): Promise<string> {
  const fused = fuseControlNet({ model: await readDemo('controlnet'), file: 'demo/controlnet/model.onnx' }, { model: withTimestepCond(await readDemo('unet')), file: 'lcm/unet/model.onnx' });
  const path = join(dir, 'denoiser', 'model.onnx');
  await mkdir(join(dir, 'denoiser'), { recursive: true });
  await writeFile(path, encodeModel(fused));
  return path;
}

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;

export const ROWS: ExportRow[] = [
  {
    contract: contract('lcm-full-unet'),
    async build(dir) {
      const unet = await writeLcmUnet(dir);
      return writeManifestVariant(dir, 'lcm-full-unet', (m) => {
        useSeparatePair(m);
        m.models['demo-sd15'].graphs.unet.path = unet;
      });
    },
  },
  {
    contract: contract('lcm-full-fused'),
    async build(dir) {
      const denoiser = await writeLcmFused(dir);
      return writeManifestVariant(dir, 'lcm-full-fused', (m) => {
        m.models['demo-sd15'].graphs.denoiser.path = denoiser;
      });
    },
  },
  {
    // An LCM-LoRA fused into the weights leaves the graph a plain ControlNet-ready UNet: the demo pair, served with the lcm scheduler.
    contract: contract('lcm-lora-unet'),
    async build(dir) {
      return writeManifestVariant(dir, 'lcm-lora-unet', (m) => {
        useSeparatePair(m);
        m.models['demo-sd15'].scheduler = { name: 'lcm', config: {} };
      });
    },
  },
];
