/**
 * VAE encoders that sample inside the graph (latent_dist.sample() traced in) are refused at start,
 * naming the fix; `qr-art models vae-mean` makes one servable; and every encoder row that is
 * served (mean latent_sample, optimum's latent_parameters, the vae-mean rewrite) gives refinement,
 * the face pass and outpainting that reproduce for the same seed, and the same images as each other.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { create } from '@bufbuild/protobuf';
import { FunctionProtoSchema, GraphProtoSchema } from 'onnx-buf';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/seams.ts';
import { facePattern } from '../../scripts/demo-models/face-pattern.ts';
import { buildVaeEncoder } from '../../scripts/demo-models/vae.ts';
import { rawImage } from '../../src/image/raw.ts';
import { encodeModel, node, valueInfo } from '../../src/onnx/proto.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { outpaint } from '../../src/pipeline/outpaint.ts';
import { enhanceFaces, findFaceSquares } from '../../src/pipeline/face-pass.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { randomOpsOf } from '../../src/onnx/random-ops.ts';
import { randomOpsInFile } from '../../src/pipeline/vae-encoder-check.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { copyModel, withSamplingEncoder } from '../helpers/onnx-variants.ts';

const BIN = join(import.meta.dirname, '../../bin/qr-art.js');
const row = (id: string) => ROWS.find((r) => r.contract.id === id)!;
const open = async (manifest: string): Promise<PipelineSessions> =>
  createSessions(await loadManifest(manifest), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1 });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-vae-check-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the graph scan', () => {
  it('finds random ops in the graph, in subgraphs and in model-local functions, and none in the demo encoder', async () => {
    expect(randomOpsOf(withSamplingEncoder(copyModel(buildVaeEncoder())))).toEqual(['RandomNormalLike']);
    expect(randomOpsOf(copyModel(buildVaeEncoder()))).toEqual([]);
    const inBranch = copyModel(buildVaeEncoder());
    const branch = create(GraphProtoSchema, { name: 'b', node: [node('RandomUniform', [], ['u'], { shape: [1] })], output: [valueInfo('u', 'float32', [1])] });
    inBranch.graph!.node.push(node('If', ['flag'], ['picked'], { then_branch: { graph: branch }, else_branch: { graph: branch } }));
    expect(randomOpsOf(inBranch)).toEqual(['RandomUniform']);
    const inFunction = copyModel(buildVaeEncoder());
    inFunction.functions.push(create(FunctionProtoSchema, { name: 'draw', domain: 'custom', node: [node('Bernoulli', ['p'], ['b'])] }));
    expect(randomOpsOf(inFunction)).toEqual(['Bernoulli']);
    // From a file: a clean encoder is not decoded (its bytes never name a random op).
    await writeFile(join(dir, 'clean.onnx'), buildVaeEncoder());
    await writeFile(join(dir, 'sampling.onnx'), encodeModel(withSamplingEncoder(copyModel(buildVaeEncoder()))));
    expect(await randomOpsInFile(join(dir, 'clean.onnx'))).toEqual([]);
    expect(await randomOpsInFile(join(dir, 'sampling.onnx'))).toEqual(['RandomNormalLike']);
  });

  it('is needed: the sampling encoder gives other latents for the same image on every call', async () => {
    const s = await ort.InferenceSession.create(encodeModel(withSamplingEncoder(copyModel(buildVaeEncoder()))), { logSeverityLevel: 3 });
    const image = new ort.Tensor('float32', Float32Array.from({ length: 3 * 64 * 64 }, (_, i) => Math.sin(i) * 0.5), [1, 3, 64, 64]);
    const a = (await s.run({ sample: image })).latent_sample!.data as Float32Array;
    const b = (await s.run({ sample: image })).latent_sample!.data as Float32Array;
    await s.release();
    expect(Buffer.compare(Buffer.from(a.buffer), Buffer.from(b.buffer))).not.toBe(0);
  });
});

describe('start-up', () => {
  it('refuses a sampling encoder, naming the re-export and the vae-mean rewrite', async () => {
    const manifest = await row('sampling-vae-encoder').build(join(dir, 'sampling'));
    const err = await open(manifest).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain(row('sampling-vae-encoder').contract.refusal!);
    expect(message).toContain('RandomNormalLike');
    expect(message).toContain('latent_parameters');
    expect(message).toContain('qr-art models vae-mean --in');
  });

  it('qr-art models vae-mean writes an encoder that outputs the mean, checked; a clean encoder is left alone (exit 1)', async () => {
    const out = join(dir, 'mean', 'model.onnx');
    const run = promisify(execFile);
    const ok = await run(process.execPath, [BIN, 'models', 'vae-mean', '--in', join(dir, 'sampling.onnx'), '--out', out]);
    expect(ok.stdout).toContain('replaced 1 random draw by zeros');
    expect(ok.stdout).toContain('checked: ONNX Runtime opens it and it fits the vae_encoder role');
    expect(await randomOpsInFile(out)).toEqual([]);
    const bad = await run(process.execPath, [BIN, 'models', 'vae-mean', '--in', join(dir, 'clean.onnx'), '--out', out]).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 1 });
    expect((bad as { stderr: string }).stderr).toContain('draws no random numbers');
  }, 30_000);
});

function qrControl(size: number) {
  const canvas = { width: size, height: size };
  return renderControlImage({ content: 'QR1', pattern: 's1', canvas, placement: placementFor(canvas, 0.85), background: 'gray', errorCorrectionLevel: 'H' }).image;
}

/** 128 px generated, refined at 192 px: the VAE encoder runs. */
const refineRequest: Txt2ImgRequest = {
  prompt: 'a purple castle',
  negativePrompt: 'blurry',
  seed: 77,
  batchSize: 1,
  steps: 4,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control: qrControl(192),
  controlScale: 1.2,
  controlStart: 0,
  controlEnd: 1,
  nativeSize: 128,
  width: 192,
  height: 192,
  refine: { strength: 0.5 },
};

/** One face of the demo detector's test pattern: the face pass encodes its square. */
const portrait = facePattern(192, 192, [{ cx: 70, cy: 80, d: 60 }]);

const picture = rawImage(Uint8Array.from({ length: 64 * 64 * 3 }, (_, i) => (i * 37) % 251), 64, 64, 3);

describe('served encoder rows reproduce for the same seed', () => {
  const served = ['deterministic-latent-sample-vae-encoder', 'optimum-latent-parameters-vae-encoder', 'qr-art-vae-mean'];
  const results = new Map<string, { refined: Buffer; faced: Buffer; outpainted: Buffer }>();

  for (const id of served) {
    it(`${id}: refinement, the face pass and outpainting give the same bytes twice`, async () => {
      const sessions = await open(await row(id).build(join(dir, id)));
      try {
        const target = sessions.forWorkflow('generate_qr_art_v5', 'universal');
        const a = await generate(refineRequest, target);
        const b = await generate(refineRequest, target);
        expect(a.refined).toMatchObject({ width: 192, height: 192 });
        expect(Buffer.from(a.images[0]!.data)).toEqual(Buffer.from(b.images[0]!.data));
        const squares = await findFaceSquares([portrait], target);
        expect(squares[0]).toHaveLength(1);
        const faceRequest = { ...refineRequest, batchSize: 1, refine: false as const };
        const [f1] = await enhanceFaces([portrait], squares, faceRequest, target, { tick: () => undefined });
        const [f2] = await enhanceFaces([portrait], squares, faceRequest, target, { tick: () => undefined });
        expect(f1).not.toBe(portrait);
        expect(Buffer.from(f1!.data)).toEqual(Buffer.from(f2!.data));
        const request = { image: picture, padding: { left: 16, right: 0, top: 0, bottom: 0 }, type: 'one_shot' as const, prompt: 'a blue lake', seed: 5, tuning: { steps: 3 } };
        const o1 = await outpaint(request, sessions.forOutpainting());
        const o2 = await outpaint(request, sessions.forOutpainting());
        expect(Buffer.from(o1.image.data)).toEqual(Buffer.from(o2.image.data));
        results.set(id, { refined: Buffer.from(a.images[0]!.data), faced: Buffer.from(f1!.data), outpainted: Buffer.from(o1.image.data) });
      } finally {
        await sessions.release();
      }
    }, 30_000);
  }

  it('and all three give the same images: each serves the distribution mean', () => {
    const [first, ...rest] = served.map((id) => results.get(id));
    expect(first).toBeDefined();
    for (const r of rest) expect(r).toEqual(first);
  });
});
