/**
 * Full LCM checkpoints: the guidance embedding (diffusers' get_guidance_scale_embedding of
 * cfg − 1) reaches a UNet's or fused graph's timestep_cond, and such a model runs one row per
 * image whatever the guidance. LCM-LoRA (a plain UNet) keeps ordinary CFG above 1.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { LCM_COND_DIM, LCM_COND_GAIN, ROWS, writeLcmUnet } from '../../scripts/demo-models/exports/lcm.ts';
import { useSeparatePair, writeManifestVariant } from '../../scripts/demo-models/manifest-variants.ts';
import { readGraphFacts } from '../../src/models/graph-facts.ts';
import { ROWS as CONTRACTS } from '../../src/models/contracts/lcm.ts';
import { encodePrompts } from '../../src/pipeline/diffusion-parts.ts';
import { guidanceEmbedding } from '../../src/pipeline/lcm-guidance.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { setRunHook } from '../../src/pipeline/graph-session.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { outpaint } from '../../src/pipeline/outpaint.ts';
import { warmUp } from '../../src/pipeline/warm-up.ts';
import { rawImage } from '../../src/image/raw.ts';
import type { RawImage } from '../../src/image/raw.ts';

/** diffusers' formula written out independently: w·1000, half = D/2, freq_k = exp(−k·ln 1e4/(half−1)), [sin ‖ cos], 0-pad odd D. */
function reference(guidance: number, dim: number): number[] {
  const w = (guidance - 1) * 1000;
  const half = Math.floor(dim / 2);
  const args = Array.from({ length: half }, (_, k) => w * Math.exp((-k * Math.log(10000)) / (half - 1)));
  return [...args.map(Math.sin), ...args.map(Math.cos), ...(dim % 2 ? [0] : [])];
}

describe('guidanceEmbedding', () => {
  it('is [sin ‖ cos] of (g − 1)·1000 over log-spaced frequencies, as diffusers computes it', () => {
    // D = 4: half = 2, frequencies 1 and 1e-4; g = 1.5 → w = 500.
    const four = guidanceEmbedding(1.5, 4);
    [Math.sin(500), Math.sin(0.05), Math.cos(500), Math.cos(0.05)].forEach((v, i) => expect(four[i]).toBeCloseTo(v, 6));
    for (const [g, dim] of [[8.5, 256], [1, 256], [2, 7], [0.5, 64]] as const) {
      const got = guidanceEmbedding(g, dim);
      const want = reference(g, dim);
      expect(got.length).toBe(dim);
      // float32 arguments (as torch's) against float64 ones: |Δarg| ≤ 7500·2^-24 per element.
      want.forEach((v, i) => expect(Math.abs(got[i]! - v), `g=${g} D=${dim} [${i}]`).toBeLessThan(1e-3));
    }
    expect(guidanceEmbedding(2, 7)[6]).toBe(0);
    // No guidance (g = 1): sin 0 ‖ cos 0.
    expect([...guidanceEmbedding(1, 8)]).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });
});

const opened: PipelineSessions[] = [];
afterAll(async () => {
  for (const s of opened) await s.release();
});

async function open(manifest: string): Promise<PipelineSessions> {
  const s = await createSessions(await loadManifest(manifest), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, roles: ['vae_encoder'] });
  opened.push(s);
  return s;
}

const tempDir = () => mkdtemp(join(tmpdir(), 'qrart-lcm-'));

function request(guidance: number): Txt2ImgRequest {
  const control: RawImage = { width: 64, height: 64, channels: 3, data: new Uint8Array(64 * 64 * 3).map((_, i) => (((i / 3) >> 3) % 2 ? 255 : 0)) } as RawImage;
  return {
    prompt: 'a purple castle', negativePrompt: 'blurry', seed: 7, batchSize: 1, steps: 2, guidance, scheduler: 'lcm',
    control, controlScale: 1, controlStart: 0, controlEnd: 1, width: 64, height: 64, nativeSize: 64, refine: false,
  } as Txt2ImgRequest;
}

const differ = (a: RawImage, b: RawImage) => Buffer.compare(Buffer.from(a.data), Buffer.from(b.data)) !== 0;

describe('full LCM UNet (separate pair)', () => {
  it('feeds the embedding to timestep_cond: the fixture shifts its output by gain × the embedding mean', async () => {
    const dir = await tempDir();
    const unet = await ort.InferenceSession.create(await writeLcmUnet(dir), { intraOpNumThreads: 1 });
    const feeds = (cond: Float32Array): Record<string, ort.Tensor> => {
      const f: Record<string, ort.Tensor> = {
        sample: new ort.Tensor('float32', new Float32Array(4 * 8 * 8).fill(0.1), [1, 4, 8, 8]),
        timestep: new ort.Tensor('float32', Float32Array.of(500), [1]),
        encoder_hidden_states: new ort.Tensor('float32', new Float32Array(77 * 768), [1, 77, 768]),
        timestep_cond: new ort.Tensor('float32', cond, [1, LCM_COND_DIM]),
      };
      for (const name of unet.inputNames.filter((n) => n.endsWith('_additional_residual'))) {
        const meta = unet.inputMetadata.find((m) => m.name === name) as { shape: readonly (number | string)[] };
        const c = meta.shape[1] as number;
        const side = name.startsWith('mid') || /_(9|10|11)_/.test(name) ? 1 : /_(6|7|8)_/.test(name) ? 2 : /_(3|4|5)_/.test(name) ? 4 : 8;
        f[name] = new ort.Tensor('float32', new Float32Array(c * side * side), [1, c, side, side]);
      }
      return f;
    };
    const mean = (v: Float32Array) => v.reduce((a, b) => a + b, 0) / v.length;
    const a = guidanceEmbedding(1, LCM_COND_DIM);
    const b = guidanceEmbedding(8.5, LCM_COND_DIM);
    const outA = (await unet.run(feeds(a))).out_sample!.data as Float32Array;
    const outB = (await unet.run(feeds(b))).out_sample!.data as Float32Array;
    expect(outA[0]! - outB[0]!).toBeCloseTo(LCM_COND_GAIN * (mean(a) - mean(b)), 5);
    await unet.release();
  });

  it('runs one row per image at any guidance (the UNet sees one row where CFG would feed two), and the guidance changes the image', async () => {
    const dir = await tempDir();
    const unet = await writeLcmUnet(dir);
    const manifest = await writeManifestVariant(dir, 'lcm-one-row', (m) => {
      useSeparatePair(m);
      m.models['demo-sd15'].graphs.unet.path = unet;
    });
    const target = (await open(manifest)).forWorkflow('generate_qr_art_v5s', 'universal');
    expect(target.denoiser.embedsGuidance).toBe(true);
    expect((await encodePrompts(target.model, 'p', 'n', true)).rows).toBe(1);
    const unetRows: number[] = [];
    setRunHook(async (graph, run) => {
      const out = await run();
      if (graph.role === 'unet') unetRows.push(out.out_sample!.dims[0]!);
      return out;
    });
    try {
      const low = await generate(request(1), target);
      const high = await generate(request(4), target);
      expect(differ(low.images[0]!, high.images[0]!)).toBe(true);
    } finally {
      setRunHook(undefined);
    }
    // 2 steps at each guidance, one image: one row each time, never the doubled CFG batch.
    expect(unetRows).toEqual([1, 1, 1, 1]);
  });
});

describe('export rows', () => {
  it('each LCM row matches its own contract only, and serves a generation', async () => {
    for (const row of ROWS) {
      const dir = await tempDir();
      const manifest = await row.build(dir);
      const spec = JSON.parse(await readFile(manifest, 'utf8')).models['demo-sd15'].graphs;
      const role = row.contract.role as 'unet' | 'denoiser';
      const facts = await readGraphFacts(spec[role].path, role);
      expect(CONTRACTS.filter((c) => c.role === role && c.matches(facts)).map((c) => c.id), row.contract.id).toEqual([row.contract.id]);
      const target = (await open(manifest)).forWorkflow('generate_qr_art_v5s', 'universal');
      const full = row.contract.id !== 'lcm-lora-unet';
      expect(target.denoiser.embedsGuidance, row.contract.id).toBe(full);
      // LCM-LoRA: guidance > 1 is CFG (two text rows); a full LCM never doubles.
      expect((await encodePrompts(target.model, 'p', 'n', true)).rows, row.contract.id).toBe(full ? 1 : 2);
      const result = await generate(request(full ? 3 : 1), target);
      expect(result.images).toHaveLength(1);
    }
  });

  it('a full LCM denoiser beside an ordinary inpainting UNet: the worker warms up and outpaints, that UNet keeping its two CFG rows', async () => {
    const dir = await tempDir();
    const manifest = await ROWS.find((row) => row.contract.id === 'lcm-full-fused')!.build(dir);
    const sessions = await createSessions(await loadManifest(manifest), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1 });
    opened.push(sessions);
    const model = sessions.models.get('demo-sd15')!;
    expect(model.denoiser.embedsGuidance).toBe(true);
    expect(model.graphs.unet_inpaint).toBeDefined();
    await warmUp(sessions, 'native', pino({ level: 'silent' }));
    expect((await encodePrompts(model, 'p', 'n', true, 'unet_inpaint')).rows).toBe(2);
    const picture = rawImage(Uint8Array.from({ length: 64 * 64 * 3 }, (_, i) => (i * 37) % 251), 64, 64, 3);
    const result = await outpaint({ image: picture, padding: { left: 16, right: 0, top: 0, bottom: 0 }, type: 'one_shot', prompt: 'a blue lake', seed: 5, tuning: { steps: 1 } }, sessions.forOutpainting());
    expect([result.image.width, result.image.height]).toEqual([80, 64]);
  });

  it('the fused full LCM graph takes timestep_cond and the guidance changes its image', async () => {
    const dir = await tempDir();
    const target = (await open(await ROWS.find((r) => r.contract.id === 'lcm-full-fused')!.build(dir))).forWorkflow('generate_qr_art_v5s', 'universal');
    expect(target.denoiser.kind).toBe('fused');
    expect(target.denoiser.graphs[0]!.hasInput('timestep_cond')).toBe(true);
    const a = await generate(request(1), target);
    const b = await generate(request(4), target);
    expect(differ(a.images[0]!, b.images[0]!)).toBe(true);
  });
});
