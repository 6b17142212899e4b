/**
 * Fixtures of the seam rows (src/models/contracts/seams.ts): the demo ControlNet, UNet and VAE
 * encoder rewritten the way each exporter writes them (graph-variants.ts), and, for the rows
 * that a qr-art command makes servable, the command's own rewrite applied to them. Every other
 * role uses the demo graphs.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/seams.ts';
import { fuseControlNet } from '../../../src/onnx/fuse.ts';
import { encodeModel, type ModelProto } from '../../../src/onnx/proto.ts';
import { addScaleInput } from '../../../src/onnx/scale-wrap.ts';
import { replaceNormalDraws } from '../../../src/onnx/vae-mean.ts';
import { writeManifestVariant, type ManifestJson } from '../manifest-variants.ts';
import { buildControlNet, buildUnet } from '../unet.ts';
import { buildVaeEncoder } from '../vae.ts';
import { copyModel, withHalfBody, withHalfIo, withLatentParameters, withoutScaleInput, withSamplingEncoder } from './graph-variants.ts';
import type { ExportRow } from './row.ts';

const contract = (id: string) => {
  const c = CONTRACTS.find((r) => r.id === id);
  if (!c) throw new Error(`no seam contract '${id}'`);
  return c;
};

async function writeGraph(dir: string, name: string, model: ModelProto): Promise<string> {
  const file = join(dir, name, 'model.onnx');
  await mkdir(join(dir, name), { recursive: true });
  await writeFile(file, encodeModel(model));
  return file;
}

/** The demo model as a separate pair of the given graphs. */
async function pairRow(dir: string, id: string, controlnet: ModelProto, unet: ModelProto): Promise<string> {
  const cn = await writeGraph(dir, 'controlnet', controlnet);
  const un = await writeGraph(dir, 'unet', unet);
  return writeManifestVariant(dir, id, (m: ManifestJson) => {
    const graphs = m.models['demo-sd15'].graphs;
    delete graphs.denoiser;
    graphs.controlnet = { path: cn };
    graphs.unet = { path: un };
  });
}

/** The demo model with this VAE encoder (and `outputs` mapped when given). */
async function encoderRow(dir: string, id: string, encoder: ModelProto, outputs?: Record<string, string>): Promise<string> {
  const file = await writeGraph(dir, 'vae_encoder', encoder);
  return writeManifestVariant(dir, id, (m: ManifestJson) => {
    m.models['demo-sd15'].graphs.vae_encoder = { path: file, ...(outputs ? { outputs } : {}) };
  });
}

const sourceCn = () => copyModel(buildControlNet());
const sourceUnet = () => copyModel(buildUnet());
const sourceVae = () => copyModel(buildVaeEncoder());

export const ROWS: ExportRow[] = [
  {
    contract: contract('onnxstack-controlnet-no-scale'),
    build: (dir) => pairRow(dir, 'onnxstack-controlnet-no-scale', withoutScaleInput(sourceCn()), sourceUnet()),
  },
  {
    contract: contract('qr-art-scaled-controlnet'),
    build: (dir) => pairRow(dir, 'qr-art-scaled-controlnet', addScaleInput(withoutScaleInput(sourceCn()), 'controlnet.onnx'), sourceUnet()),
  },
  {
    contract: contract('onnxstack-fp32io-controlnet-fp16io-unet'),
    build: (dir) => pairRow(dir, 'onnxstack-fp32io-controlnet-fp16io-unet', withHalfBody(sourceCn()), withHalfIo(sourceUnet())),
  },
  {
    contract: contract('qr-art-fused-mixed-precision'),
    build: async (dir) => {
      const fused = fuseControlNet({ model: withHalfBody(sourceCn()), file: 'controlnet.onnx' }, { model: withHalfIo(sourceUnet()), file: 'unet.onnx' });
      const file = await writeGraph(dir, 'denoiser', fused);
      return writeManifestVariant(dir, 'qr-art-fused-mixed-precision', (m: ManifestJson) => {
        m.models['demo-sd15'].graphs.denoiser = { path: file };
      });
    },
  },
  {
    contract: contract('onnxstack-fp16-body-fp32-io-pair'),
    build: (dir) => pairRow(dir, 'onnxstack-fp16-body-fp32-io-pair', withHalfBody(sourceCn()), withHalfBody(sourceUnet())),
  },
  {
    contract: contract('sampling-vae-encoder'),
    build: (dir) => encoderRow(dir, 'sampling-vae-encoder', withSamplingEncoder(sourceVae())),
  },
  {
    contract: contract('qr-art-vae-mean'),
    exercises: ['txt2img', 'refine', 'outpaint', 'face'],
    build: (dir) => {
      const model = withSamplingEncoder(sourceVae());
      replaceNormalDraws(model, 'vae_encoder.onnx');
      return encoderRow(dir, 'qr-art-vae-mean', model);
    },
  },
  {
    contract: contract('optimum-latent-parameters-vae-encoder'),
    exercises: ['txt2img', 'refine', 'outpaint', 'face'],
    build: (dir) => encoderRow(dir, 'optimum-latent-parameters-vae-encoder', withLatentParameters(sourceVae()), { latent_sample: 'latent_parameters' }),
  },
  {
    contract: contract('deterministic-latent-sample-vae-encoder'),
    exercises: ['txt2img', 'refine', 'outpaint', 'face'],
    build: (dir) => encoderRow(dir, 'deterministic-latent-sample-vae-encoder', sourceVae()),
  },
];
