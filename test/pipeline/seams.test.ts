/**
 * The seam of a separate ControlNet + UNet pair: a ControlNet without a conditioning_scale input
 * and a pair whose precisions differ are refused at start naming the fix (never scaled or
 * converted per step in JavaScript); `qr-art models scale-controlnet` makes the first servable
 * (as the model's pair or an extra ControlNet), `qr-art models fuse` the second; a pair of fp16
 * graphs with float32 IO on both sides is served as is.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/seams.ts';
import { useSeparatePair, writeManifestVariant, type ManifestJson } from '../../scripts/demo-models/manifest-variants.ts';
import { buildControlNet } from '../../scripts/demo-models/unet.ts';
import { writeModelFile } from '../../src/onnx/model-file.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions, type DiffusionModel, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { copyModel, withoutScaleInput } from '../helpers/onnx-variants.ts';

const BIN = join(import.meta.dirname, '../../bin/qr-art.js');
const run = promisify(execFile);
const row = (id: string) => ROWS.find((r) => r.contract.id === id)!;
const open = async (manifest: string): Promise<PipelineSessions> =>
  createSessions(await loadManifest(manifest), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, roles: [] });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-seams-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const canvas = { width: 128, height: 128 };
const request: Txt2ImgRequest = {
  prompt: 'a purple castle',
  negativePrompt: 'blurry',
  seed: 9,
  batchSize: 1,
  steps: 3,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control: renderControlImage({ content: 'QR1', pattern: 's1', canvas, placement: placementFor(canvas, 0.85), background: 'gray', errorCorrectionLevel: 'H' }).image,
  controlScale: 1.2,
  controlStart: 0,
  controlEnd: 1,
  nativeSize: 128,
  width: 128,
  height: 128,
  refine: false,
};

/** The generated image's bytes for `workflow` on the sessions of `manifest`. */
async function imageOf(manifest: string, workflow = 'generate_qr_art_v5'): Promise<Uint8Array> {
  const sessions = await open(manifest);
  try {
    const target: DiffusionModel = sessions.forWorkflow(workflow as 'generate_qr_art_v5', 'universal');
    return (await generate(request, target)).images[0]!.data;
  } finally {
    await sessions.release();
  }
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

let demoPair: Uint8Array;
beforeAll(async () => {
  demoPair = await imageOf(await writeManifestVariant(dir, 'demo-pair', useSeparatePair));
});

describe('refused at start, naming the fix', () => {
  it('a ControlNet without conditioning_scale: names scale-controlnet and models fuse', async () => {
    const err = (await open(await row('onnxstack-controlnet-no-scale').build(join(dir, 'no-scale'))).catch((e: Error) => e)) as Error;
    expect(err.message).toContain(row('onnxstack-controlnet-no-scale').contract.refusal!);
    expect(err.message).toContain('qr-art models scale-controlnet --in');
    expect(err.message).toContain('qr-art models fuse --controlnet');
  });

  it('a float32-IO ControlNet with an fp16-IO UNet: names models fuse', async () => {
    const err = (await open(await row('onnxstack-fp32io-controlnet-fp16io-unet').build(join(dir, 'mixed'))).catch((e: Error) => e)) as Error;
    expect(err.message).toContain(row('onnxstack-fp32io-controlnet-fp16io-unet').contract.refusal!);
    expect(err.message).toMatch(/is float32 in the ControlNet and float16 in the UNet/);
    expect(err.message).toContain('qr-art models fuse --controlnet');
  });
});

describe('served', () => {
  it('the scale-wrapped ControlNet as the pair gives the demo pair’s image', async () => {
    const got = await imageOf(await row('qr-art-scaled-controlnet').build(join(dir, 'scaled')));
    expect(maxDiff(got, demoPair)).toBeLessThanOrEqual(1);
  });

  it('the mismatched pair fused by models fuse, and fp16 graphs with float32 IO on both sides, generate close to the fp32 pair', async () => {
    const fused = await imageOf(await row('qr-art-fused-mixed-precision').build(join(dir, 'fused')));
    const halfBodies = await imageOf(await row('onnxstack-fp16-body-fp32-io-pair').build(join(dir, 'half-bodies')));
    expect(maxDiff(fused, demoPair)).toBeLessThanOrEqual(4);
    expect(maxDiff(halfBodies, demoPair)).toBeLessThanOrEqual(4);
  });
});

describe('qr-art models scale-controlnet', () => {
  it('keeps external data, multiplies every residual by the new input inside the graph, and the result serves as an extra ControlNet', async () => {
    await mkdir(join(dir, 'onnxstack'));
    const source = join(dir, 'onnxstack', 'model.onnx');
    await writeModelFile(withoutScaleInput(copyModel(buildControlNet())), source, 'always');
    const out = join(dir, 'wrapped', 'model.onnx');
    const ok = await run(process.execPath, [BIN, 'models', 'scale-controlnet', '--in', source, '--out', out, '--external-data', 'always']);
    expect(ok.stdout).toContain('checked: ONNX Runtime opens it and it fits the controlnet role');
    expect((await stat(`${out}_data`)).size).toBeGreaterThan(1024);

    // Scale s gives s × the residuals of the demo ControlNet at scale 1; 0 gives zeros.
    const [wrapped, demo] = [await ort.InferenceSession.create(out, { logSeverityLevel: 3 }), await ort.InferenceSession.create(buildControlNet(), { logSeverityLevel: 3 })];
    const feeds = {
      sample: new ort.Tensor('float32', Float32Array.from({ length: 4 * 8 * 8 }, (_, i) => Math.sin(i)), [1, 4, 8, 8]),
      timestep: new ort.Tensor('float32', [500], [1]),
      encoder_hidden_states: new ort.Tensor('float32', Float32Array.from({ length: 77 * 768 }, (_, i) => Math.cos(i * 0.3)), [1, 77, 768]),
      controlnet_cond: new ort.Tensor('float32', Float32Array.from({ length: 3 * 64 * 64 }, (_, i) => (i % 5) / 4), [1, 3, 64, 64]),
    };
    const base = await demo.run({ ...feeds, conditioning_scale: new ort.Tensor('float64', [1], []) });
    const half = await wrapped.run({ ...feeds, conditioning_scale: new ort.Tensor('float32', [0.5], []) });
    const off = await wrapped.run({ ...feeds, conditioning_scale: new ort.Tensor('float32', [0], []) });
    expect(Object.keys(half)).toHaveLength(13);
    for (const name of Object.keys(base)) {
      const want = Float32Array.from(base[name]!.data as Float32Array, (v) => v * 0.5);
      expect(maxDiff(half[name]!.data as Float32Array, want)).toBeLessThan(1e-5);
      expect((off[name]!.data as Float32Array).every((v) => v === 0)).toBe(true);
    }
    await wrapped.release();
    await demo.release();

    // As one of the manifest's controlnets, paired with the model's unet: refused before, served after.
    const extra = (path: string) => (m: ManifestJson) => {
      m.models['demo-sd15'].graphs.unet = { path: join(import.meta.dirname, '../../models/demo/unet/model.onnx') };
      m.controlnets = { art: { path } };
      m.workflows.generate_qr_art.controlnet = 'art';
    };
    const refused = await open(await writeManifestVariant(dir, 'extra-unscaled', extra(source))).catch((e: Error) => e);
    expect((refused as Error).message).toContain('has no conditioning_scale input');
    const served = await imageOf(await writeManifestVariant(dir, 'extra-wrapped', extra(out)), 'generate_qr_art');
    expect(served).toHaveLength(128 * 128 * 3);
  }, 40_000);

  it('rewrites an export in place (--out = --in) without losing the weights it reads', async () => {
    await mkdir(join(dir, 'in-place'));
    const model = join(dir, 'in-place', 'model.onnx');
    await writeModelFile(withoutScaleInput(copyModel(buildControlNet())), model, 'always');
    const before = (await stat(`${model}_data`)).size;
    const ok = await run(process.execPath, [BIN, 'models', 'scale-controlnet', '--in', model, '--out', model, '--external-data', 'always']);
    expect(ok.stdout).toContain('checked: ONNX Runtime opens it and it fits the controlnet role');
    expect((await stat(`${model}_data`)).size).toBe(before);
    const session = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
    expect(session.inputNames).toContain('conditioning_scale');
    await session.release();
    expect((await readdir(join(dir, 'in-place'))).sort()).toEqual(['model.onnx', 'model.onnx_data']);
  });

  it('refuses a ControlNet that already has the input (exit 1)', async () => {
    await writeFile(join(dir, 'plain.onnx'), buildControlNet());
    const bad = await run(process.execPath, [BIN, 'models', 'scale-controlnet', '--in', join(dir, 'plain.onnx'), '--out', join(dir, 'x.onnx')]).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 1 });
    expect((bad as { stderr: string }).stderr).toContain('already has a conditioning_scale input');
  });
});

