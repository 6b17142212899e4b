/**
 * Fixtures of our own graphs (src/models/contracts/qr-art.ts): the demo graphs as shipped (the
 * fused denoiser, the 13-residual pair with conditioning_scale, text encoder, VAE decoder,
 * inpainting UNet) and the demo pair fused with guidance outside (`qr-art models fuse
 * --guidance outside`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/qr-art.ts';
import { fuseControlNet } from '../../../src/onnx/fuse.ts';
import { decodeModel } from '../../../src/onnx/proto.ts';
import type { Exercise, ExportRow } from './row.ts';
import { DEMO_DIR, separatePair, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;
/** The shipped demo manifest, unchanged (paths made absolute). */
const demo = (id: string, exercises?: readonly Exercise[]): ExportRow => ({
  contract: contract(id),
  ...(exercises ? { exercises } : {}),
  build: (dir) => writeFixtureManifest(dir, () => undefined),
});
/** The demo model as the separate 13-residual pair. */
const pair = (id: string): ExportRow => ({ contract: contract(id), build: (dir) => writeFixtureManifest(dir, (g) => separatePair(g)) });

export const ROWS: ExportRow[] = [
  demo('qr-art-fused-denoiser', ['txt2img', 'refine']),
  {
    contract: contract('qr-art-fused-denoiser-guidance-outside'),
    async build(dir) {
      const read = async (p: string) => ({ model: decodeModel(await readFile(join(DEMO_DIR, p))), file: join(DEMO_DIR, p) });
      const fused = fuseControlNet(await read('controlnet/model.onnx'), await read('unet/model.onnx'), { guidance: 'outside' });
      const file = await writeGraph(dir, 'denoiser/model.onnx', fused);
      return writeFixtureManifest(dir, (g) => (g.denoiser = { path: file }));
    },
  },
  pair('qr-art-controlnet-with-scale'),
  pair('qr-art-unet-13-residuals'),
  demo('qr-art-demo-text-encoder'),
  demo('qr-art-demo-vae-decoder'),
  demo('qr-art-demo-unet-inpaint', ['outpaint']),
  demo('qr-art-demo-captioner-encoder', ['caption']),
  demo('qr-art-demo-captioner-decoder', ['caption']),
];
