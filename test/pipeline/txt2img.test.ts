/**
 * ControlNet text-to-image on the demo graphs (CPU, small sizes): determinism, batch = seeds,
 * prompt colours, the QR control, NSFW flags, exact output sizes and the refinement pass.
 */
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLOUR_TOKEN_IDS, NSFW_TRIGGER_ID } from '../../scripts/demo-models/text-encoder.ts';
import { buildControlNet, buildUnet } from '../../scripts/demo-models/unet.ts';
import type { RawImage } from '../../src/image/raw.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { detectNsfw } from '../../src/pipeline/nsfw.ts';
import type { GraphSession } from '../../src/pipeline/graph-session.ts';
import { createSessions, type DiffusionModel, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { float16ToFloat32, float32ToFloat16, fromHalf, toHalf } from '../../src/pipeline/tensors.ts';
import { controlActive, generate, generationFrame, imageSeed, refineFrame, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { FusedDenoiser, SeparateDenoiser } from '../../src/pipeline/denoisers.ts';
import type { Frame } from '../../src/pipeline/framing.ts';
import { useSeparatePair, writeManifestVariant } from '../../scripts/demo-models/manifest-variants.ts';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { fuseControlNet } from '../../src/onnx/fuse.ts';
import { decodeModel, encodeModel } from '../../src/onnx/proto.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { scanCheck } from '../../src/qr/scan.ts';
import { MAX_SEED } from '../../src/pipeline/random.ts';

const MANIFEST = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));

let sessions: PipelineSessions;
let target: DiffusionModel;
/** The same model as the separate ControlNet + UNet pair. */
let pairSessions: PipelineSessions;
let pair: DiffusionModel;

beforeAll(async () => {
  const manifest = await loadManifest(MANIFEST);
  sessions = await createSessions(manifest, {
    executionProvider: { provider: 'cpu' },
    logger: pino({ level: 'silent' }),
    intraOpThreads: 1,
    roles: ['vae_encoder', 'safety_checker'],
  });
  target = sessions.forWorkflow('generate_qr_art_v5', 'universal');
  const pairManifest = await writeManifestVariant(await mkdtemp(join(tmpdir(), 'qrart-pair-')), 'pair', useSeparatePair);
  pairSessions = await createSessions(await loadManifest(pairManifest), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, roles: ['vae_encoder'] });
  pair = pairSessions.forWorkflow('generate_qr_art_v5', 'universal');
});

afterAll(async () => {
  await sessions?.release();
  await pairSessions?.release();
});

function qrControl(size: number, content = 'QR1', ratio = 0.85): { image: RawImage; codeSide: number } {
  const canvas = { width: size, height: size };
  const c = renderControlImage({ content, pattern: 's1', canvas, placement: placementFor(canvas, ratio), background: 'gray', errorCorrectionLevel: 'H' });
  return { image: c.image, codeSide: c.layout.codePixels };
}

/** A small, fast request: 128 px at a 128 px native size, 6 steps. */
function request(over: Partial<Txt2ImgRequest> = {}): Txt2ImgRequest {
  const width = over.width ?? 128;
  const height = over.height ?? 128;
  return {
    prompt: 'a purple castle',
    negativePrompt: 'blurry',
    seed: 1234,
    batchSize: 1,
    steps: 6,
    guidance: 6,
    scheduler: 'dpmpp_2m_karras',
    control: qrControl(Math.max(width, height)).image,
    controlScale: 1.2,
    controlStart: 0,
    controlEnd: 1,
    nativeSize: 128,
    ...over,
    width,
    height,
  };
}

function meanRgb(image: RawImage): [number, number, number] {
  const m = [0, 0, 0];
  const n = image.width * image.height;
  for (let p = 0; p < n; p++) for (let c = 0; c < 3; c++) m[c]! += image.data[p * 3 + c]!;
  return m.map((v) => v / n) as [number, number, number];
}

const bytes = (image: RawImage): Buffer => Buffer.from(image.data);

describe('demo vocabulary reaches the demo text encoder ids', () => {
  it('colour words and nsfwdemo are single tokens at the ids the encoder reads', () => {
    const tok = sessions.models.get('demo-sd15')!.tokenizer;
    for (const [word, id] of Object.entries(COLOUR_TOKEN_IDS)) expect(tok.encodeContent(`${word.toUpperCase()},`), word).toEqual([id, 256 + 11]);
    expect(tok.encodeContent('a nsfwdemo picture')[1]).toBe(NSFW_TRIGGER_ID);
    expect(tok.encodeContent('gray')).not.toContain(COLOUR_TOKEN_IDS.grey);
  });
});

describe('generate', () => {
  it('is deterministic: same request, same bytes; another seed, other bytes', async () => {
    const a = await generate(request(), target);
    const b = await generate(request(), target);
    const c = await generate(request({ seed: 1235 }), target);
    expect(a.images).toHaveLength(1);
    expect(bytes(a.images[0]!).equals(bytes(b.images[0]!))).toBe(true);
    expect(bytes(a.images[0]!).equals(bytes(c.images[0]!))).toBe(false);
  });

  it('image i of a batch is the single image of seed + i (DPM++ 2M Karras and noise-injecting Euler a)', async () => {
    for (const scheduler of ['dpmpp_2m_karras', 'euler_a'] as const) {
      const batch = await generate(request({ scheduler, batchSize: 2, seed: 77 }), target);
      expect(batch.images).toHaveLength(2);
      const first = await generate(request({ scheduler, seed: 77 }), target);
      const second = await generate(request({ scheduler, seed: 78 }), target);
      expect(bytes(batch.images[0]!).equals(bytes(first.images[0]!)), scheduler).toBe(true);
      expect(bytes(batch.images[1]!).equals(bytes(second.images[0]!)), scheduler).toBe(true);
      expect(bytes(batch.images[0]!).equals(bytes(batch.images[1]!))).toBe(false);
    }
  });

  it('seeds wrap at MAX_SEED', () => {
    expect(imageSeed(MAX_SEED, 0)).toBe(MAX_SEED);
    expect(imageSeed(MAX_SEED, 1)).toBe(0);
    expect(imageSeed(MAX_SEED - 1, 3)).toBe(1);
  });

  it('prompt colours: red is red, blue is blue', async () => {
    const red = meanRgb((await generate(request({ prompt: 'a red dragon', controlScale: 0.5 }), target)).images[0]!);
    const blue = meanRgb((await generate(request({ prompt: 'a blue dragon', controlScale: 0.5 }), target)).images[0]!);
    expect(red[0]).toBeGreaterThan(red[2] + 60);
    expect(blue[2]).toBeGreaterThan(blue[0] + 60);
  });

  it('the QR control shows: scannable at qrStrength 1.3, not without control', async () => {
    const qr = qrControl(384);
    const base = request({ width: 384, height: 384, nativeSize: 384, steps: 12, guidance: 7, prompt: 'blue', control: qr.image, controlScale: 1.3 });
    const withControl = await generate(base, target);
    expect((await scanCheck(withControl.images[0]!, 'QR1', { codeSide: qr.codeSide })).scannable).toBe(true);
    const without = await generate({ ...base, controlScale: 0 }, target);
    expect((await scanCheck(without.images[0]!, 'QR1', { codeSide: qr.codeSide })).scannable).toBe(false);
  });

  it('applies the ControlNet only inside [controlStart, controlEnd] of the schedule, in one fused call per step', async () => {
    const graph = (target.denoiser as FusedDenoiser).graph;
    let calls = 0;
    let controlled = 0;
    const counting = Object.create(graph, {
      run: {
        value: (...args: Parameters<GraphSession['run']>) => {
          calls += 1;
          if ((args[0].conditioning_scale!.data as Float32Array)[0] !== 0) controlled += 1;
          return graph.run(...args);
        },
      },
    }) as GraphSession;
    const run = async (controlStart: number, controlEnd: number, controlScale = 1.2): Promise<number> => {
      calls = 0;
      controlled = 0;
      await generate(request({ steps: 10, controlStart, controlEnd, controlScale }), { model: target.model, denoiser: new FusedDenoiser(counting) });
      expect(calls).toBe(10);
      return controlled;
    };
    expect(await run(0, 1)).toBe(10);
    expect(await run(0.2, 1)).toBe(8);
    expect(await run(0, 0.5)).toBe(5);
    expect(await run(0, 1, 0)).toBe(0);
    expect(controlActive(0, 10, 0.05, 1)).toBe(false);
    expect(controlActive(9, 10, 0, 0.95)).toBe(false);
  });

  it("a fused graph in diffusers' layout (2B rows, CFG outside, controlnet_conds [1, 2B, ...], names mapped) gives the same bytes", async () => {
    const fused = fuseControlNet({ model: decodeModel(buildControlNet()), file: 'cn' }, { model: decodeModel(buildUnet()), file: 'unet' }, { guidance: 'outside' });
    const rename = { controlnet_cond: 'controlnet_conds', conditioning_scale: 'conditioning_scales' } as Record<string, string>;
    for (const v of fused.graph!.input) v.name = rename[v.name] ?? v.name;
    for (const n of fused.graph!.node) n.input = n.input.map((x) => rename[x] ?? x);
    const dir = await mkdtemp(join(tmpdir(), 'qrart-diffusers-'));
    await writeFile(join(dir, 'model.onnx'), encodeModel(fused));
    const file = await writeManifestVariant(dir, 'diffusers', (m) => (m.models['demo-sd15'].graphs.denoiser = { path: join(dir, 'model.onnx'), inputs: rename }));
    const other = await createSessions(await loadManifest(file), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, roles: [] });
    try {
      const d = other.forWorkflow('generate_qr_art_v5', 'universal');
      expect((d.denoiser as FusedDenoiser).foldsGuidance).toBe(false);
      for (const r of [request({ batchSize: 2 }), request({ guidance: 1, scheduler: 'lcm', steps: 4 })]) {
        const [a, b] = [await generate(r, d), await generate(r, target)];
        a.images.forEach((image, i) => expect(bytes(image).equals(bytes(b.images[i]!))).toBe(true));
      }
    } finally {
      await other.release();
    }
  });

  it('the separate pair runs its ControlNet only inside the window, and gives the fused graph\'s bytes', async () => {
    const separate = pair.denoiser as SeparateDenoiser;
    let calls = 0;
    const counting = Object.create(separate.controlnet, {
      run: { value: (...args: Parameters<GraphSession['run']>) => ((calls += 1), separate.controlnet.run(...args)) },
    }) as GraphSession;
    const counted = { model: pair.model, denoiser: new SeparateDenoiser(separate.unet, counting) };
    await generate(request({ steps: 10, controlStart: 0.2, controlEnd: 0.7 }), counted);
    expect(calls).toBe(5);
    for (const r of [request(), request({ batchSize: 2, scheduler: 'euler_a', controlStart: 0.3 }), request({ guidance: 1, scheduler: 'lcm', steps: 4 })]) {
      const [fused, separated] = [await generate(r, target), await generate(r, pair)];
      separated.images.forEach((image, i) => expect(bytes(image).equals(bytes(fused.images[i]!)), `image ${i}`).toBe(true));
    }
  });

  it('guidance <= 1 and LCM (the fast tiers) still give deterministic images', async () => {
    const a = await generate(request({ scheduler: 'lcm', steps: 4, guidance: 1 }), target);
    const b = await generate(request({ scheduler: 'lcm', steps: 4, guidance: 1 }), target);
    expect(bytes(a.images[0]!).equals(bytes(b.images[0]!))).toBe(true);
    expect(meanRgb(a.images[0]!)[0]).toBeGreaterThan(meanRgb(a.images[0]!)[1]); // purple
  });

  it('reports progress for every step and times every stage', async () => {
    const seen: [number, number][] = [];
    const r = await generate(request({ batchSize: 2 }), target, { onProgress: (step, total) => seen.push([step, total]) });
    expect(seen).toEqual([1, 2, 3, 4, 5, 6].map((s) => [s, 6]));
    for (const stage of ['text_encoder', 'denoiser', 'scheduler', 'vae_decode', 'total'] as const) {
      expect(r.timings[stage], stage).toBeGreaterThanOrEqual(0);
    }
    expect(r.timings.refine_denoiser).toBeUndefined();
  });

  it('hands over each final image as soon as it is made, in order, the same images it returns', async () => {
    const handed: [number, RawImage, number][] = [];
    let steps = 0;
    const r = await generate(request({ width: 320, height: 192, batchSize: 2, steps: 10, control: qrControl(320).image }), target, {
      onProgress: (step) => (steps = step),
      onImage: (i, image) => handed.push([i, image, steps]),
    });
    expect(handed.map(([i]) => i)).toEqual([0, 1]);
    expect(handed.map(([, image]) => image)).toEqual(r.images);
    // Image 0 is handed over before image 1's refinement steps run.
    expect(handed[0]![2]).toBeLessThan(handed[1]![2]);
  });

  it('stops between steps when aborted', async () => {
    const controller = new AbortController();
    const run = generate(request({ steps: 6 }), target, { onProgress: (step) => step === 2 && controller.abort(new Error('job cancelled')), signal: controller.signal });
    await expect(run).rejects.toThrow('job cancelled');
  });
});

describe('output sizes', () => {
  it('chooses the generation size: the output itself up to the native area, else the native area at exactly its aspect', () => {
    const size = (f: Frame) => ({ width: f.width, height: f.height });
    expect(size(generationFrame({ width: 768, height: 768 }, 768))).toEqual({ width: 768, height: 768 });
    expect(size(generationFrame({ width: 672, height: 896 }, 768))).toEqual({ width: 672, height: 896 });
    expect(size(generationFrame({ width: 1024, height: 576 }, 768))).toEqual({ width: 1024, height: 576 });
    expect(size(generationFrame({ width: 2880, height: 2880 }, 768))).toEqual({ width: 768, height: 768 });
    expect(size(generationFrame({ width: 3840, height: 2160 }, 768))).toEqual({ width: 1024, height: 576 });
    expect(size(generationFrame({ width: 2592, height: 3456 }, 768))).toEqual({ width: 648, height: 864 });
    expect(size(refineFrame({ width: 3840, height: 2160 }, 1536 * 1536))).toEqual({ width: 2048, height: 1152 });
    expect(size(refineFrame({ width: 2592, height: 3456 }, 1536 * 1536))).toEqual({ width: 1320, height: 1760 });
    expect(size(refineFrame({ width: 960, height: 960 }, 1536 * 1536))).toEqual({ width: 960, height: 960 });
    // No size of exactly 1248:1664 on a 64-pixel grid near the area: the rounded canvas, the output centred in it.
    expect(generationFrame({ width: 1248, height: 1664 }, 768, 64)).toEqual({ width: 640, height: 896, content: { x: 0, y: 21, width: 640, height: 853 } });
  });

  it('a non-square output and an output that is no multiple of 8 come out at exactly their size', async () => {
    const tall = await generate(request({ width: 96, height: 160, control: qrControl(160).image }), target);
    expect(tall.generated).toEqual({ width: 96, height: 160 });
    expect(tall.images.map((i) => [i.width, i.height, i.channels])).toEqual([[96, 160, 3]]);
    const odd = await generate(request({ width: 101, height: 67, control: qrControl(101).image }), target);
    expect(odd.generated).toEqual({ width: 104, height: 64 });
    expect([odd.images[0]!.width, odd.images[0]!.height]).toEqual([101, 67]);
  });

  it('an upscaled output is refined at its size (or at maxPixels) and comes out exact', async () => {
    const seen: number[] = [];
    const r = await generate(request({ width: 320, height: 192, batchSize: 2, steps: 10, control: qrControl(320).image }), target, { onProgress: (_, total) => seen.push(total) });
    expect(r.generated).toEqual({ width: 160, height: 96 });
    // Native size 128 here: the 40×24-latent canvas is refined in 16×16 tiles.
    expect(r.refined).toEqual({ width: 320, height: 192, steps: 3, tiles: 6 });
    expect(r.images.map((i) => [i.width, i.height])).toEqual([[320, 192], [320, 192]]);
    expect(seen).toHaveLength(10 + 2 * 3);
    expect(new Set(seen)).toEqual(new Set([16]));
    expect(r.timings.refine_vae_encode).toBeGreaterThan(0);
    expect(r.timings.refine_denoiser).toBeGreaterThan(0);

    const capped = await generate(request({ width: 320, height: 192, refine: { maxPixels: 240 * 144 }, control: qrControl(320).image }), target);
    expect(capped.refined).toMatchObject({ width: 240, height: 144 });
    expect([capped.images[0]!.width, capped.images[0]!.height]).toEqual([320, 192]);

    const plain = await generate(request({ width: 320, height: 192, refine: false, control: qrControl(320).image }), target);
    expect(plain.refined).toBeUndefined();
    expect([plain.images[0]!.width, plain.images[0]!.height]).toEqual([320, 192]);
    expect(plain.timings.resize).toBeGreaterThan(0);
  });

  it('a refinement tile that cannot start frees the tiles started before it', async () => {
    // Fault injection: the 4th start (the 3rd of the refinement's 6 tiles) fails as an upload to a full device would.
    const real = target.denoiser;
    let started = 0;
    let released = 0;
    const failing: typeof real = Object.create(real);
    failing.start = async (setup) => {
      if (++started === 4) throw new Error('no room on the device for this tile');
      const step = await real.start(setup);
      return { ...step, release: () => (released++, step.release()) };
    };
    await expect(generate(request({ width: 320, height: 192, steps: 4, control: qrControl(320).image }), { ...target, denoiser: failing })).rejects.toThrow('no room on the device');
    // The generation pass's one region, and the two tiles that started.
    expect(started).toBe(4);
    expect(released).toBe(3);
  });
});

describe('NSFW', () => {
  it("flags the demo's trigger word and passes an ordinary prompt", async () => {
    const checker = sessions.models.get('demo-sd15')!.nsfw!;
    const flagged = await generate(request({ prompt: 'nsfwdemo', controlScale: 0.3 }), target);
    const blue = await generate(request({ prompt: 'blue', controlScale: 0.3 }), target);
    expect(await detectNsfw([...flagged.images, ...blue.images], checker)).toEqual([true, false]);
    expect(await detectNsfw([], checker)).toEqual([]);
  });
});

describe('fp16 at the edges', () => {
  it('converts exactly representable values both ways and rounds to nearest even', () => {
    const values = [0, -0, 1, -2, 0.5, 65504, 6.103515625e-5, 5.960464477539063e-8, Infinity, -Infinity];
    expect(Array.from(float16ToFloat32(float32ToFloat16(Float32Array.from(values))))).toEqual(values);
    expect(toHalf(1)).toBe(0x3c00);
    expect(toHalf(65520)).toBe(0x7c00); // rounds up past the largest half
    expect(toHalf(1 + 2 ** -11)).toBe(0x3c00); // tie → even
    expect(toHalf(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (up)
    expect(toHalf(2 ** -26)).toBe(0); // below half the smallest subnormal
    expect(fromHalf(toHalf(Number.NaN))).toBeNaN();
    expect(fromHalf(toHalf(0.1))).toBeCloseTo(0.1, 3);
  });
});
