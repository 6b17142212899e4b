/**
 * The WebGPU path (EXECUTION_PROVIDER=webgpu): onnxruntime-node's bundled WebGPU provider on
 * whatever Vulkan device the machine has; in CI that is Mesa's software rasterizer (lavapipe,
 * installed by .ci/run). The same generation as on the CPU, with the latents kept on the device
 * for the whole sampling loop; and the same fail-loud rules as CUDA when there is no adapter.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { decodeModel, encodeModel } from '../../src/onnx/proto.ts';
import { FusedDenoiser } from '../../src/pipeline/denoisers.ts';
import { withHalfIo } from '../../scripts/demo-models/exports/graph-variants.ts';
import { GraphSession, setRunHook } from '../../src/pipeline/graph-session.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { DEMO_MANIFEST } from '../../scripts/demo-models/manifest-variants.ts';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '../../bin/qr-art.js');

/** Why WebGPU cannot run here, or undefined when it can. */
async function webgpuUnavailable(): Promise<string | undefined> {
  try {
    const s = await ort.InferenceSession.create(join(import.meta.dirname, '../../models/demo/vae_encoder/model.onnx'), { executionProviders: ['webgpu'], logSeverityLevel: 4 });
    await s.release();
    return undefined;
  } catch (err) {
    return (err as Error).message.split('\n')[0];
  }
}

const unavailable = await webgpuUnavailable();
if (unavailable) console.warn(`WebGPU tests skipped: no WebGPU adapter on this machine (${unavailable}); .ci/run installs Mesa's lavapipe for them`);

const request = (over: Partial<Txt2ImgRequest> = {}): Txt2ImgRequest => {
  const canvas = { width: over.width ?? 256, height: over.height ?? 256 };
  const control = renderControlImage({ content: 'webgpu', pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray' }).image;
  return { prompt: 'a purple castle', seed: 5, batchSize: 1, steps: 10, guidance: 6, scheduler: 'dpmpp_2m_karras', control, controlScale: 1.3, controlStart: 0, controlEnd: 1, nativeSize: 256, ...canvas, ...over };
};

function pixelDiff(a: RawImage, b: RawImage): { max: number; mean: number } {
  let max = 0;
  let sum = 0;
  for (let i = 0; i < a.data.length; i++) {
    const d = Math.abs(a.data[i]! - b.data[i]!);
    max = Math.max(max, d);
    sum += d;
  }
  return { max, mean: sum / a.data.length };
}

describe.skipIf(unavailable !== undefined)('WebGPU (a real Vulkan device, or lavapipe)', () => {
  let gpu: PipelineSessions;
  let cpu: PipelineSessions;
  beforeAll(async () => {
    const manifest = await loadManifest(DEMO_MANIFEST);
    const options = { logger: pino({ level: 'silent' }), intraOpThreads: 1, roles: ['vae_encoder'] as const };
    gpu = await createSessions(manifest, { ...options, executionProvider: { provider: 'webgpu' } });
    cpu = await createSessions(manifest, { ...options, executionProvider: { provider: 'cpu' } });
  }, 120_000);
  afterAll(async () => {
    setRunHook(undefined);
    await gpu?.release();
    await cpu?.release();
  });

  it('runs on WebGPU, not on a silent CPU fallback, and gives the CPU’s images within a level', async () => {
    expect(gpu.provider).toEqual({ provider: 'webgpu' });
    expect(gpu.device).toBeDefined();
    for (const r of [request(), request({ scheduler: 'euler_a', batchSize: 2 }), request({ scheduler: 'lcm', guidance: 1, steps: 4 })]) {
      const [onGpu, onCpu] = [await generate(r, gpu.forWorkflow('generate_qr_art_v5', 'universal')), await generate(r, cpu.forWorkflow('generate_qr_art_v5', 'universal'))];
      onGpu.images.forEach((image, i) => {
        const d = pixelDiff(image, onCpu.images[i]!);
        expect(d.max, `${r.scheduler} image ${i}`).toBeLessThanOrEqual(2);
        expect(d.mean).toBeLessThan(0.05);
      });
    }
  }, 300_000);

  it('keeps the latents, the text rows and the control image on the device for the whole loop', async () => {
    const feeds: { sample: string; text: string; cond: string }[] = [];
    let outputs = 0;
    setRunHook(async (graph, runIt) => {
      const out = await runIt();
      if (graph.role === 'denoiser') outputs += Object.values(out).filter((t) => (t as ort.Tensor).location === 'gpu-buffer').length;
      return out;
    });
    const target = gpu.forWorkflow('generate_qr_art_v5', 'universal');
    const graph = target.denoiser.graphs[0]!;
    const original = graph.session.run.bind(graph.session);
    graph.session.run = ((f: Record<string, ort.Tensor>, ...rest: unknown[]) => {
      feeds.push({ sample: f.sample!.location, text: f.encoder_hidden_states!.location, cond: f.controlnet_cond!.location });
      return (original as (...a: unknown[]) => Promise<ort.InferenceSession.ReturnType>)(f, ...rest);
    }) as typeof graph.session.run;
    try {
      await generate(request(), target);
    } finally {
      graph.session.run = original;
      setRunHook(undefined);
    }
    expect(feeds).toHaveLength(10);
    // The first step's latents come from the host (the seeded noise); every later one never left the device.
    expect(feeds.map((f) => f.sample)).toEqual(['cpu', ...new Array<string>(9).fill('gpu-buffer')]);
    expect(new Set(feeds.flatMap((f) => [f.text, f.cond]))).toEqual(new Set(['gpu-buffer']));
    expect(outputs).toBe(10);
  }, 120_000);

  it('an fp16-IO denoiser: its float16 noise_pred, left on the device, is read back as float32 close to the fp32 graph’s', async () => {
    const fp32 = decodeModel(await readFile(join(import.meta.dirname, '../../models/demo/denoiser/model.onnx')));
    const predictionOf = async (bytes: Uint8Array, file: string): Promise<Float32Array> => {
      const session = await ort.InferenceSession.create(bytes, { executionProviders: ['webgpu'], preferredOutputLocation: { noise_pred: 'gpu-buffer' }, logSeverityLevel: 3 });
      const denoiser = new FusedDenoiser(GraphSession.bind('denoiser', file, session, {}), gpu.device!);
      const text = { hidden: new Float32Array(2 * 77 * 768).fill(0.1), rows: 2, tokens: 77, width: 768 };
      const control = rawImage(new Uint8Array(64 * 64).fill(128), 64, 64, 1);
      const step = await denoiser.start({ text, batch: 1, h: 8, w: 8, control, controlScale: 1, guidance: 7, time: (_stage, fn) => fn() });
      try {
        return await step.predict(new Float32Array(4 * 8 * 8).fill(0.5), 500, true);
      } finally {
        step.release();
        await session.release();
      }
    };
    const full = await predictionOf(encodeModel(fp32), 'fp32.onnx');
    const half = await predictionOf(encodeModel(withHalfIo(decodeModel(encodeModel(fp32)))), 'fp16.onnx');
    expect(half).toBeInstanceOf(Float32Array);
    expect(half).toHaveLength(full.length);
    for (let i = 0; i < full.length; i++) expect(Math.abs(half[i]! - full[i]!), `[${i}]`).toBeLessThan(2e-3 + 2e-3 * Math.abs(full[i]!));
  }, 120_000);

  it('a denoiser whose control image cannot go up frees the text rows it already put on the device', async () => {
    // Fault injection: the second upload (the control image) fails as it would on a full device.
    const io = gpu.device!;
    let uploads = 0;
    let disposed = 0;
    const failing: typeof io = Object.create(io);
    failing.upload = async (t) => {
      if (++uploads === 2) throw new Error('no room on the device for the control image');
      const up = await io.upload(t);
      const dispose = up.dispose.bind(up);
      up.dispose = () => (disposed++, dispose());
      return up;
    };
    const denoiser = new FusedDenoiser(gpu.forWorkflow('generate_qr_art_v5', 'universal').denoiser.graphs[0]!, failing);
    const text = { hidden: new Float32Array(2 * 77 * 768).fill(0.1), rows: 2, tokens: 77, width: 768 };
    const control = rawImage(new Uint8Array(64 * 64).fill(128), 64, 64, 1);
    await expect(denoiser.start({ text, batch: 1, h: 8, w: 8, control, controlScale: 1, guidance: 7, time: (_stage, fn) => fn() })).rejects.toThrow('no room on the device');
    expect(uploads).toBe(2);
    expect(disposed).toBe(1);
  }, 120_000);

  it('a refinement in tiles (host loop: predictions read back per tile) matches the CPU too', async () => {
    const r = request({ width: 512, height: 512, steps: 10 });
    const [onGpu, onCpu] = [await generate(r, gpu.forWorkflow('generate_qr_art_v5', 'universal')), await generate(r, cpu.forWorkflow('generate_qr_art_v5', 'universal'))];
    expect(onGpu.refined?.tiles).toBeGreaterThan(1);
    const d = pixelDiff(onGpu.images[0]!, onCpu.images[0]!);
    expect(d.max).toBeLessThanOrEqual(2);
  }, 300_000);
});

describe('WebGPU without an adapter', () => {
  let out: string;
  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'qrart-webgpu-'));
  });
  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });
  // No Vulkan driver: the loader is pointed at a driver list that does not exist.
  const noDevice = { ...process.env, VK_ICD_FILENAMES: '/nonexistent/icd.json', VK_DRIVER_FILES: '/nonexistent/icd.json', QR_ART_FROM_SOURCE: '1' };
  const args = ['generate', '--prompt', 'a koi', '--qr-content', 'https://example.com/webgpu', '--steps', '10', '--out', ''];

  it('EXECUTION_PROVIDER=webgpu fails loudly, naming the graph and the cause; webgpu,cpu falls back saying so', async () => {
    args[args.length - 1] = out;
    const strict = await run(process.execPath, [BIN, ...args, '--provider', 'webgpu'], { env: noDevice }).catch((e: { code: number; stderr: string }) => e);
    expect(strict).toMatchObject({ code: 1 });
    expect((strict as { stderr: string }).stderr).toMatch(/models\/demo\/text_encoder\/model\.onnx \(text_encoder\): cannot create an ONNX Runtime session on webgpu: .*WebGPU adapter/);
    const lenient = await run(process.execPath, [BIN, ...args, '--provider', 'webgpu,cpu'], { env: noDevice });
    expect(lenient.stdout).toMatch(/timings \(ms, cpu\)/);
    expect(lenient.stderr).toMatch(/webgpu is unavailable; every graph runs on the CPU/);
  }, 120_000);
});
