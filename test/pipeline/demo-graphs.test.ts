/**
 * The generated demo SD1.5 graphs: real-export contracts (names, dtypes, ranks) and the demo
 * behaviours the pipeline relies on, at small sizes on CPU.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDemoModels, DEMO_GRAPHS } from '../../scripts/demo-models/build.ts';
import { CAPTION_IDS, CAPTION_VOCAB, captionTokenizerJson } from '../../scripts/demo-models/captioner.ts';
import { DECODER_MIX, LATENT_SCALE } from '../../scripts/demo-models/latent-space.ts';
import { CLIP_MEAN, CLIP_STD } from '../../scripts/demo-models/safety-checker.ts';
import { BOS_ID, COLOUR_TOKEN_IDS, EOS_ID, NSFW_TRIGGER_ID } from '../../scripts/demo-models/text-encoder.ts';
import { CONTROL_RESIDUALS } from '../../src/onnx/control-residuals.ts';

type Feeds = Record<string, ort.Tensor>;
type Meta = { name: string; type: string; shape: (number | string)[] };

const sessions = new Map<string, ort.InferenceSession>();
const session = (path: string): ort.InferenceSession => {
  const s = sessions.get(path);
  if (!s) throw new Error(`no session ${path}`);
  return s;
};
const run = async (path: string, feeds: Feeds): Promise<Record<string, ort.Tensor>> => session(path).run(feeds);
const f32 = (data: Float32Array, dims: number[]): ort.Tensor => new ort.Tensor('float32', data, dims);
const floats = (t: ort.Tensor | undefined): Float32Array => t!.data as Float32Array;

beforeAll(async () => {
  for (const g of DEMO_GRAPHS) {
    sessions.set(g.path, await ort.InferenceSession.create(g.build(), { intraOpNumThreads: 1, interOpNumThreads: 1 }));
  }
});

afterAll(async () => {
  for (const s of sessions.values()) await s.release();
});

// ---- helpers -------------------------------------------------------------------------------

function prompt(...ids: number[]): Int32Array {
  const a = new Int32Array(77).fill(EOS_ID);
  a[0] = BOS_ID;
  ids.forEach((id, i) => (a[i + 1] = id));
  return a;
}

async function encodeText(...prompts: Int32Array[]): Promise<ort.Tensor> {
  const ids = new Int32Array(77 * prompts.length);
  prompts.forEach((p, i) => ids.set(p, i * 77));
  const out = await run('text_encoder/model.onnx', { input_ids: new ort.Tensor('int32', ids, [prompts.length, 77]) });
  return out.last_hidden_state!;
}

/** SD1.5 ᾱ_t, computed here independently of the graphs. */
function alphaBar(t: number): number {
  let abar = 1;
  for (let i = 0; i <= t; i++) {
    const beta = (Math.sqrt(0.00085) + ((Math.sqrt(0.012) - Math.sqrt(0.00085)) * i) / 999) ** 2;
    abar *= 1 - beta;
  }
  return abar;
}

function zeroResiduals(batch: number, h: number, w: number): Feeds {
  return Object.fromEntries(
    CONTROL_RESIDUALS.map((r) => {
      const dims = [batch, r.channels, Math.ceil(h / r.factor), Math.ceil(w / r.factor)];
      return [r.role, f32(new Float32Array(dims.reduce((a, b) => a * b, 1)), dims)];
    }),
  );
}

/** x0 implied by the UNet's eps at integer timestep t: (x − √(1−ᾱ)·eps)/√ᾱ. */
async function impliedX0(
  ehs: ort.Tensor,
  sample: Float32Array,
  t: number,
  h: number,
  w: number,
  residuals?: Feeds,
): Promise<Float32Array> {
  const batch = ehs.dims[0]!;
  const out = await run('unet/model.onnx', {
    sample: f32(sample, [batch, 4, h, w]),
    timestep: f32(new Float32Array(batch).fill(t), [batch]),
    encoder_hidden_states: ehs,
    ...(residuals ?? zeroResiduals(batch, h, w)),
  });
  const a = alphaBar(t);
  return Float32Array.from(floats(out.out_sample), (e, i) => (sample[i]! - Math.sqrt(1 - a) * e) / Math.sqrt(a));
}

/** Mean RGB in [0,1] of the decoded image of diffusion-space latents [1,4,h,w]. */
async function decodedMean(latents: Float32Array, h: number, w: number): Promise<number[]> {
  const out = await run('vae_decoder/model.onnx', { latent_sample: f32(latents.map((v) => v / LATENT_SCALE), [1, 4, h, w]) });
  const img = floats(out.sample);
  const plane = img.length / 3;
  return [0, 1, 2].map((c) => img.subarray(c * plane, (c + 1) * plane).reduce((s, v) => s + (v + 1) / 2, 0) / plane);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** A solid-colour (or split) RGB image in [0,1], planar [3,size,size]. */
function planarImage(size: number, colourAt: (x: number, y: number) => readonly number[]): Float32Array {
  const out = new Float32Array(3 * size * size);
  for (let y = 0; y < size; y++)
    for (let x = 0; x < size; x++) {
      const c = colourAt(x, y);
      for (let k = 0; k < 3; k++) out[k * size * size + y * size + x] = c[k]!;
    }
  return out;
}

// ---- contracts -----------------------------------------------------------------------------

const LATENT = ['batch', 4, 'height', 'width'];
const EHS = ['batch', 77, 768];
const residualShape = (factor: number, channels: number): (number | string)[] =>
  factor === 1 ? ['batch', channels, 'height', 'width'] : ['batch', channels, `height/${factor}`, `width/${factor}`];
const RESIDUALS: Meta[] = CONTROL_RESIDUALS.map((r) => ({ name: r.role, type: 'float32', shape: residualShape(r.factor, r.channels) }));

const CONTRACTS: Record<string, { inputs: Meta[]; outputs: Meta[] }> = {
  'text_encoder/model.onnx': {
    inputs: [{ name: 'input_ids', type: 'int32', shape: ['batch', 77] }],
    outputs: [
      { name: 'last_hidden_state', type: 'float32', shape: EHS },
      { name: 'pooler_output', type: 'float32', shape: ['batch', 768] },
      // optimum's names with output_hidden_states: the embeddings, then each layer (clipSkip reads them).
      ...[0, 1, 2].map((i) => ({ name: `hidden_states.${i}`, type: 'float32', shape: EHS })),
    ],
  },
  'controlnet/model.onnx': {
    inputs: [
      { name: 'sample', type: 'float32', shape: LATENT },
      { name: 'timestep', type: 'float32', shape: ['batch'] },
      { name: 'encoder_hidden_states', type: 'float32', shape: EHS },
      { name: 'controlnet_cond', type: 'float32', shape: ['batch', 3, 'image_height', 'image_width'] },
      { name: 'conditioning_scale', type: 'float64', shape: [] },
    ],
    outputs: RESIDUALS,
  },
  'unet/model.onnx': {
    inputs: [
      { name: 'sample', type: 'float32', shape: LATENT },
      { name: 'timestep', type: 'float32', shape: ['batch'] },
      { name: 'encoder_hidden_states', type: 'float32', shape: EHS },
      ...RESIDUALS,
    ],
    outputs: [{ name: 'out_sample', type: 'float32', shape: LATENT }],
  },
  'denoiser/model.onnx': {
    inputs: [
      { name: 'sample', type: 'float32', shape: LATENT },
      { name: 'timestep', type: 'float32', shape: [1] },
      { name: 'encoder_hidden_states', type: 'float32', shape: ['text_rows', 'sequence', 768] },
      { name: 'controlnet_cond', type: 'uint8', shape: [1, 3, 'image_height', 'image_width'] },
      { name: 'conditioning_scale', type: 'float32', shape: [] },
      { name: 'guidance_scale', type: 'float32', shape: [] },
    ],
    outputs: [{ name: 'noise_pred', type: 'float32', shape: LATENT }],
  },
  'unet_inpaint/model.onnx': {
    inputs: [
      { name: 'sample', type: 'float32', shape: ['batch', 9, 'height', 'width'] },
      { name: 'timestep', type: 'float32', shape: ['batch'] },
      { name: 'encoder_hidden_states', type: 'float32', shape: EHS },
    ],
    outputs: [{ name: 'out_sample', type: 'float32', shape: LATENT }],
  },
  'vae_decoder/model.onnx': {
    inputs: [{ name: 'latent_sample', type: 'float32', shape: LATENT }],
    outputs: [{ name: 'sample', type: 'float32', shape: ['batch', 3, 'image_height', 'image_width'] }],
  },
  'vae_encoder/model.onnx': {
    inputs: [{ name: 'sample', type: 'float32', shape: ['batch', 3, 'image_height', 'image_width'] }],
    outputs: [{ name: 'latent_sample', type: 'float32', shape: LATENT }],
  },
  'safety_checker/model.onnx': {
    inputs: [
      { name: 'clip_input', type: 'float32', shape: ['batch', 3, 224, 224] },
      { name: 'images', type: 'float32', shape: ['batch', 'height', 'width', 3] },
    ],
    outputs: [
      { name: 'out_images', type: 'float32', shape: ['batch', 'height', 'width', 3] },
      { name: 'has_nsfw_concepts', type: 'bool', shape: ['batch'] },
    ],
  },
  'captioner/encoder_model.onnx': {
    inputs: [{ name: 'pixel_values', type: 'float32', shape: ['batch', 3, 224, 224] }],
    outputs: [{ name: 'last_hidden_state', type: 'float32', shape: ['batch', 3, CAPTION_VOCAB.length] }],
  },
  'captioner/decoder_model.onnx': {
    inputs: [
      { name: 'input_ids', type: 'int64', shape: ['batch', 'sequence'] },
      { name: 'encoder_hidden_states', type: 'float32', shape: ['batch', 3, CAPTION_VOCAB.length] },
    ],
    outputs: [{ name: 'logits', type: 'float32', shape: ['batch', 'sequence', CAPTION_VOCAB.length] }],
  },
  // UltraFace version-RFB-320's contract (scripts/demo-models/face-detector.ts).
  'face_detector/model.onnx': {
    inputs: [{ name: 'input', type: 'float32', shape: [1, 3, 240, 320] }],
    outputs: [
      { name: 'scores', type: 'float32', shape: [1, 4420, 2] },
      { name: 'boxes', type: 'float32', shape: [1, 4420, 4] },
    ],
  },
};

describe('demo graph contracts', () => {
  it('covers every graph', () => {
    expect(DEMO_GRAPHS.map((g) => g.path).sort()).toEqual(Object.keys(CONTRACTS).sort());
  });

  for (const [path, contract] of Object.entries(CONTRACTS)) {
    it(`${path}: names, dtypes and dims`, () => {
      const s = session(path);
      expect(s.inputNames).toEqual(contract.inputs.map((m) => m.name));
      expect(s.outputNames).toEqual(contract.outputs.map((m) => m.name));
      const pick = (m: readonly ort.InferenceSession.ValueMetadata[]): Meta[] =>
        m.map((v) => {
          if (!v.isTensor) throw new Error(`${v.name} is not a tensor`);
          return { name: v.name, type: v.type, shape: [...v.shape] };
        });
      expect(pick(s.inputMetadata)).toEqual(contract.inputs);
      expect(pick(s.outputMetadata)).toEqual(contract.outputs);
    });
  }

  it('build.ts writes every graph and the captioner tokenizer, all small', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'demo-models-'));
    try {
      const written = await buildDemoModels(dir);
      expect(written.map((w) => w.path)).toEqual(expect.arrayContaining([...DEMO_GRAPHS.map((g) => g.path), 'captioner/tokenizer.json']));
      expect(written.reduce((s, w) => s + w.bytes, 0)).toBeLessThan(512 * 1024);
      const bytes = await readFile(join(dir, 'unet/model.onnx'));
      expect(Buffer.compare(bytes, Buffer.from(DEMO_GRAPHS.find((g) => g.path === 'unet/model.onnx')!.build()))).toBe(0);
      const tokenizer = JSON.parse(await readFile(join(dir, 'captioner/tokenizer.json'), 'utf8'));
      expect(tokenizer.model.vocab).toEqual(Object.fromEntries(CAPTION_VOCAB.map((w, i) => [w, i])));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// ---- behaviour -----------------------------------------------------------------------------

describe('text_encoder', () => {
  it('maps ids to distinct, deterministic embeddings', async () => {
    const a = prompt(320, 1125);
    const b = prompt(320, 1126);
    const [x, y, x2] = await Promise.all([encodeText(a), encodeText(b), encodeText(a)]);
    expect(floats(x)).toEqual(floats(x2));
    expect(maxAbsDiff(floats(x), floats(y))).toBeGreaterThan(0.5);
    // Positions differ too, so a repeated id is not a repeated vector.
    const rep = floats(await encodeText(prompt(500, 500)));
    expect(maxAbsDiff(rep.subarray(768, 1536), rep.subarray(1536, 2304))).toBeGreaterThan(0.01);
  });

  it('last_hidden_state is a layer norm of the last hidden state (mean 0, variance 1 per token), as in CLIP', async () => {
    const out = await run('text_encoder/model.onnx', { input_ids: new ort.Tensor('int32', prompt(320, NSFW_TRIGGER_ID, COLOUR_TOKEN_IDS.red), [1, 77]) });
    const h = floats(out.last_hidden_state);
    expect(floats(out['hidden_states.2'])).toEqual(h);
    for (let t = 0; t < 77; t++) {
      const row = h.subarray(t * 768, (t + 1) * 768);
      const mean = row.reduce((s, v) => s + v, 0) / 768;
      expect(Math.abs(mean)).toBeLessThan(1e-5);
      expect(row.reduce((s, v) => s + (v - mean) ** 2, 0) / 768).toBeCloseTo(1, 4);
    }
  });

  it('returns pooler_output [B,768] and marks the trigger id', async () => {
    const out = await run('text_encoder/model.onnx', {
      input_ids: new ort.Tensor('int32', Int32Array.from([...prompt(NSFW_TRIGGER_ID), ...prompt()]), [2, 77]),
    });
    expect(out.pooler_output!.dims).toEqual([2, 768]);
    const h = floats(out.last_hidden_state);
    expect(h[768 + 13]).toBe(1); // token 1, NSFW channel
    expect(h[77 * 768 + 768 + 13]).toBe(0);
  });
});

describe('vae', () => {
  it('decode(encode(x)) ≈ x for a smooth image, with the 0.18215 scaling in between', async () => {
    const size = 64;
    const img = planarImage(size, (x, y) => [
      0.6 * Math.sin((x / size) * Math.PI),
      0.5 * Math.cos((y / size) * Math.PI),
      0.4 * ((x + y) / size - 1),
    ]);
    const enc = await run('vae_encoder/model.onnx', { sample: f32(img, [1, 3, size, size]) });
    expect(enc.latent_sample!.dims).toEqual([1, 4, 8, 8]);
    const latents = floats(enc.latent_sample).map((v) => v * LATENT_SCALE); // what the pipeline keeps
    const dec = await run('vae_decoder/model.onnx', { latent_sample: f32(latents.map((v) => v / LATENT_SCALE), [1, 4, 8, 8]) });
    expect(dec.sample!.dims).toEqual([1, 3, size, size]);
    const out = floats(dec.sample);
    const meanErr = out.reduce((s, v, i) => s + Math.abs(v - img[i]!), 0) / out.length;
    expect(meanErr).toBeLessThan(0.03);
    expect(maxAbsDiff(out, img)).toBeLessThan(0.15);
  });
});

describe('unet', () => {
  const h = 8;
  const w = 8;
  const n = 4 * h * w;
  let blue: ort.Tensor;
  let red: ort.Tensor;
  beforeAll(async () => {
    [blue, red] = await Promise.all([encodeText(prompt(COLOUR_TOKEN_IDS.blue)), encodeText(prompt(COLOUR_TOKEN_IDS.red))]);
  });

  /** The UNet's target field T: the fixed point of x0(t=999, √ᾱ·T) (a contraction there). */
  async function targetOf(ehs: ort.Tensor, residuals?: Feeds): Promise<Float32Array> {
    const sa = Math.sqrt(alphaBar(999));
    let t = await impliedX0(ehs, new Float32Array(n), 999, h, w, residuals);
    for (let i = 0; i < 6; i++) t = await impliedX0(ehs, t.map((v) => v * sa), 999, h, w, residuals);
    return t;
  }

  it('eps implies the same x0 at every timestep (SD1.5 ᾱ table, fractional t interpolated)', async () => {
    const target = await targetOf(blue);
    for (const t of [999, 500, 20, 1]) {
      const x0 = await impliedX0(blue, target.map((v) => v * Math.sqrt(alphaBar(t))), t, h, w);
      expect(maxAbsDiff(x0, target)).toBeLessThan(2e-3);
    }
    // Fractional timesteps (Karras sigmas): log σ interpolated between neighbours, as diffusers does.
    const logSigma = (t: number): number => 0.5 * Math.log((1 - alphaBar(t)) / alphaBar(t));
    const ls = 0.75 * logSigma(500) + 0.25 * logSigma(501);
    const a = 1 / (1 + Math.exp(2 * ls));
    const sample = target.map((v) => v * Math.sqrt(a));
    const out = await run('unet/model.onnx', {
      sample: f32(sample, [1, 4, h, w]),
      timestep: f32(Float32Array.of(500.25), [1]),
      encoder_hidden_states: blue,
      ...zeroResiduals(1, h, w),
    });
    const x0 = floats(out.out_sample).map((e, i) => (sample[i]! - Math.sqrt(1 - a) * e) / Math.sqrt(a));
    expect(maxAbsDiff(x0, target)).toBeLessThan(2e-3);
  });

  it('x0 is a smooth field between the prompt colour and its shade', async () => {
    const [tBlue, tRed] = await Promise.all([targetOf(blue), targetOf(red)]);
    const [mBlue, mRed] = await Promise.all([decodedMean(tBlue, h, w), decodedMean(tRed, h, w)]);
    expect(mBlue[2]).toBeGreaterThan(Math.max(mBlue[0]!, mBlue[1]!) + 0.05);
    expect(mRed[0]).toBeGreaterThan(Math.max(mRed[1]!, mRed[2]!) + 0.05);
    // Every latent pixel lies on the segment between two fixed colours: a two-colour field.
    const px = (i: number): number[] => [0, 1, 2, 3].map((c) => tBlue[c * h * w + i]!);
    const pixels = Array.from({ length: h * w }, (_, i) => px(i));
    const norms = pixels.map((p) => Math.hypot(...p));
    const lo = pixels[norms.indexOf(Math.min(...norms))]!;
    const hi = pixels[norms.indexOf(Math.max(...norms))]!;
    const dir = hi.map((v, c) => v - lo[c]!);
    expect(Math.hypot(...dir)).toBeGreaterThan(0.05); // the pattern varies
    for (const p of pixels) {
      const rel = p.map((v, c) => v - lo[c]!);
      const along = rel.reduce((s, v, c) => s + v * dir[c]!, 0) / dir.reduce((s, v) => s + v * v, 0);
      const off = Math.hypot(...rel.map((v, c) => v - along * dir[c]!));
      expect(off).toBeLessThan(1e-3);
    }
  });

  it('follows the ControlNet residuals: light control, light latents', async () => {
    const size = 8 * w;
    const cond = planarImage(size, (x) => (x < size / 2 ? [0, 0, 0] : [1, 1, 1]));
    const res = await run('controlnet/model.onnx', {
      sample: f32(new Float32Array(n), [1, 4, h, w]),
      timestep: f32(Float32Array.of(999), [1]),
      encoder_hidden_states: blue,
      controlnet_cond: f32(cond, [1, 3, size, size]),
      conditioning_scale: new ort.Tensor('float64', Float64Array.of(1.2), []),
    });
    for (const r of CONTROL_RESIDUALS) expect(res[r.role]!.dims).toEqual([1, r.channels, Math.ceil(h / r.factor), Math.ceil(w / r.factor)]);
    // Channel mean of a residual = (luminance − 0.5) · scale.
    const r0 = floats(res.down_block_0_additional_residual);
    const channelMean = (i: number): number => Array.from({ length: 320 }, (_, c) => r0[c * h * w + i]!).reduce((s, v) => s + v, 0) / 320;
    expect(channelMean(0)).toBeCloseTo(-0.6, 4);
    expect(channelMean(w - 1)).toBeCloseTo(0.6, 4);
    const withControl = await targetOf(blue, res);
    const plain = await targetOf(blue);
    const luma = (x: Float32Array, i: number): number =>
      DECODER_MIX.reduce((s, row) => s + row.reduce((t, m, c) => t + m * (x[c * h * w + i]! - plain[c * h * w + i]!), 0), 0);
    expect(luma(withControl, 0)).toBeLessThan(-1); // left column: black control
    expect(luma(withControl, w - 1)).toBeGreaterThan(1); // right column: white control
  });

  it('lets the seed move low frequencies only a little, and accepts timestep [1] for batch 2', async () => {
    const target = await targetOf(blue);
    const t = 500;
    const a = alphaBar(t);
    let seed = 7;
    const noise = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
    const x1 = target.map((v) => Math.sqrt(a) * v + Math.sqrt(1 - a) * noise() * 1.7);
    const x2 = target.map((v) => Math.sqrt(a) * v + Math.sqrt(1 - a) * noise() * 1.7);
    const both = await impliedX0(
      await encodeText(prompt(COLOUR_TOKEN_IDS.blue), prompt(COLOUR_TOKEN_IDS.blue)),
      Float32Array.from([...x1, ...x2]),
      t,
      h,
      w,
    );
    const d = maxAbsDiff(both.subarray(0, n), both.subarray(n));
    expect(d).toBeGreaterThan(0.01);
    expect(maxAbsDiff(both.subarray(0, n), target)).toBeLessThan(1.5);
    const single = await run('unet/model.onnx', {
      sample: f32(Float32Array.from([...x1, ...x2]), [2, 4, h, w]),
      timestep: f32(Float32Array.of(t), [1]),
      encoder_hidden_states: await encodeText(prompt(COLOUR_TOKEN_IDS.blue), prompt(COLOUR_TOKEN_IDS.blue)),
      ...zeroResiduals(2, h, w),
    });
    expect(single.out_sample!.dims).toEqual([2, 4, h, w]);
  });
});

describe('unet_inpaint', () => {
  it('reproduces the masked-image latents where the mask keeps them', async () => {
    const h = 8;
    const w = 16;
    const plane = h * w;
    const t = 400;
    const a = alphaBar(t);
    const sample = new Float32Array(9 * plane);
    const kept = (c: number, i: number): number => 0.4 * Math.sin(c + i * 0.1);
    for (let i = 0; i < plane; i++) {
      const repaint = i % w >= w / 2 ? 1 : 0;
      for (let c = 0; c < 4; c++) sample[c * plane + i] = 0.3 * Math.cos(i * 0.7 + c);
      sample[4 * plane + i] = repaint;
      for (let c = 0; c < 4; c++) sample[(5 + c) * plane + i] = repaint ? 0 : kept(c, i);
    }
    const out = await run('unet_inpaint/model.onnx', {
      sample: f32(sample, [1, 9, h, w]),
      timestep: f32(Float32Array.of(t), [1]),
      encoder_hidden_states: await encodeText(prompt(COLOUR_TOKEN_IDS.green)),
    });
    expect(out.out_sample!.dims).toEqual([1, 4, h, w]);
    const eps = floats(out.out_sample);
    let keptErr = 0;
    let repaintedMove = 0;
    for (let i = 0; i < plane; i++)
      for (let c = 0; c < 4; c++) {
        const x0 = (sample[c * plane + i]! - Math.sqrt(1 - a) * eps[c * plane + i]!) / Math.sqrt(a);
        if (i % w < w / 2) keptErr = Math.max(keptErr, Math.abs(x0 - kept(c, i)));
        else repaintedMove = Math.max(repaintedMove, Math.abs(x0));
      }
    expect(keptErr).toBeLessThan(1e-3);
    expect(repaintedMove).toBeGreaterThan(0.05);
  });
});

describe('safety_checker', () => {
  async function check(rgb: readonly number[]): Promise<{ flagged: boolean; images: Float32Array }> {
    const clip = planarImage(224, () => rgb.map((v, c) => (v - CLIP_MEAN[c]!) / CLIP_STD[c]!));
    const images = new Float32Array(16 * 16 * 3).map((_, i) => rgb[i % 3]!);
    const out = await run('safety_checker/model.onnx', { clip_input: f32(clip, [1, 3, 224, 224]), images: f32(images, [1, 16, 16, 3]) });
    return { flagged: Boolean(out.has_nsfw_concepts!.data[0]), images: floats(out.out_images) };
  }

  it('flags a magenta image and blanks it; passes a blue one through', async () => {
    const magenta = await check([0.95, 0.1, 0.9]);
    expect(magenta.flagged).toBe(true);
    expect(magenta.images.every((v) => v === 0)).toBe(true);
    const blue = await check([0.1, 0.25, 0.9]);
    expect(blue.flagged).toBe(false);
    expect(blue.images[2]).toBeCloseTo(0.9, 5);
    expect((await check([1, 0.6, 0.78])).flagged).toBe(false); // pink is not magenta
  });

  it('end to end: the trigger id makes the UNet paint magenta; a colour word does not', async () => {
    const h = 8;
    const n = 4 * h * h;
    for (const [id, expected] of [
      [NSFW_TRIGGER_ID, true],
      [COLOUR_TOKEN_IDS.pink, false],
    ] as const) {
      const x0 = await impliedX0(await encodeText(prompt(id)), new Float32Array(n), 999, h, h);
      const mean = await decodedMean(x0, h, h);
      expect((await check(mean)).flagged).toBe(expected);
    }
  });
});

describe('captioner', () => {
  async function caption(rgbAt: (x: number, y: number) => readonly number[]): Promise<string> {
    const px = planarImage(224, rgbAt).map((v) => (v - 0.5) / 0.5);
    const enc = await run('captioner/encoder_model.onnx', { pixel_values: f32(px, [1, 3, 224, 224]) });
    const ids: number[] = [CAPTION_IDS.bos];
    while (ids.length < 12 && ids.at(-1) !== CAPTION_IDS.eos) {
      const out = await run('captioner/decoder_model.onnx', {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
        encoder_hidden_states: enc.last_hidden_state!,
      });
      const v = CAPTION_VOCAB.length;
      const last = floats(out.logits).subarray((ids.length - 1) * v, ids.length * v);
      ids.push(last.indexOf(Math.max(...last)));
    }
    return ids
      .filter((id) => id > CAPTION_IDS.eos)
      .map((id) => CAPTION_VOCAB[id])
      .join(' ');
  }

  it('greedy decode names the dominant colours', async () => {
    expect(await caption(() => [0.1, 0.2, 0.85])).toBe('a blue abstract painting');
    expect(await caption((x) => (x < 134 ? [0.1, 0.2, 0.85] : [1, 0.55, 0.08]))).toBe('a blue and orange abstract painting');
    expect(await caption((_, y) => (y < 60 ? [0.95, 0.95, 0.95] : [0.05, 0.05, 0.05]))).toBe('a black and white abstract painting');
  });

  it('ships a tokenizer.json with the same vocabulary', () => {
    const tok = JSON.parse(captionTokenizerJson());
    expect(tok.model.type).toBe('WordLevel');
    expect(Object.keys(tok.model.vocab)).toEqual([...CAPTION_VOCAB]);
  });
});
