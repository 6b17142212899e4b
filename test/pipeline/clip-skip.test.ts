/**
 * clipSkip per model: above 1 the conditioning is an earlier text-encoder layer through the final
 * layer norm, as diffusers computes it; a text encoder that cannot give it is refused at start.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLayerNormTextEncoder, FINAL_NORM_BIAS, FINAL_NORM_EPS, FINAL_NORM_SCALE } from '../../scripts/demo-models/layer-norm-text-encoder.ts';
import { type ManifestJson, writeManifestVariant } from '../../scripts/demo-models/manifest-variants.ts';
import { buildTextEncoder } from '../../scripts/demo-models/text-encoder.ts';
import { rawImage } from '../../src/image/raw.ts';
import { encodePrompts } from '../../src/pipeline/diffusion-parts.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions, type ModelSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';

const quiet = pino({ level: 'silent' });
let dir: string;
const opened: PipelineSessions[] = [];

/** Sessions of the demo manifest with its model changed by `edit`; no optional graphs. */
async function modelWith(name: string, edit: (model: ManifestJson) => void): Promise<ModelSessions> {
  const file = await writeManifestVariant(dir, name, (m) => edit(m.models['demo-sd15']));
  const s = await createSessions(await loadManifest(file), { executionProvider: { provider: 'cpu' }, logger: quiet, intraOpThreads: 1, roles: [] });
  opened.push(s);
  return s.models.get('demo-sd15')!;
}

async function writeGraph(name: string, bytes: Uint8Array): Promise<string> {
  await mkdir(join(dir, name), { recursive: true });
  const file = join(dir, name, 'model.onnx');
  await writeFile(file, bytes);
  return file;
}

const PROMPT = 'a red and blue castle';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-clip-skip-'));
});

afterAll(async () => {
  for (const s of opened) await s.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('clipSkip on the demo text encoder', () => {
  it('is 1 by default, and 2 conditions on the penultimate layer: the demo swaps its two colours there', async () => {
    const plain = await modelWith('skip-1', () => undefined);
    expect(plain.spec.clipSkip).toBe(1);
    expect(plain.clipSkip).toBeUndefined();
    const skipped = await modelWith('skip-2', (m) => (m.clipSkip = 2));
    expect(skipped.clipSkip?.output).toBe('hidden_states.1');
    const a = await encodePrompts(plain, PROMPT, '', true);
    const b = await encodePrompts(skipped, PROMPT, '', true);
    expect([b.rows, b.tokens, b.width]).toEqual([a.rows, a.tokens, a.width]);
    // Token 1 of the prompt row ("a"): colour A and B trade places; the NSFW and content flags stay.
    const at = (t: { hidden: Float32Array }, channel: number): number => t.hidden[(77 + 1) * 768 + channel]!;
    for (let c = 0; c < 4; c++) {
      expect(at(b, c)).toBeCloseTo(at(a, c + 4), 4);
      expect(at(b, c + 4)).toBeCloseTo(at(a, c), 4);
    }
    expect(at(b, 8)).toBeCloseTo(at(a, 8), 4);
    expect(at(b, 13)).toBeCloseTo(at(a, 13), 4);
  });

  it('changes the generated image', async () => {
    const request: Txt2ImgRequest = {
      prompt: PROMPT,
      seed: 3,
      batchSize: 1,
      steps: 4,
      guidance: 6,
      scheduler: 'dpmpp_2m_karras',
      control: rawImage(new Uint8Array(64 * 64).fill(128), 64, 64, 1),
      controlScale: 1,
      controlStart: 0,
      controlEnd: 1,
      width: 64,
      height: 64,
      nativeSize: 64,
      refine: false,
    };
    const image = async (model: ModelSessions): Promise<Buffer> => Buffer.from((await generate(request, { model, denoiser: model.denoiser })).images[0]!.data);
    const plain = await image(await modelWith('image-1', () => undefined));
    const again = await image(await modelWith('image-1b', () => undefined));
    const skipped = await image(await modelWith('image-2', (m) => (m.clipSkip = 2)));
    expect(plain.equals(again)).toBe(true);
    expect(plain.equals(skipped)).toBe(false);
  });
});

describe('clipSkip on a CLIP-like export with a real final LayerNormalization', () => {
  it('is the chosen hidden state through the final layer norm, as diffusers computes it', async () => {
    const file = await writeGraph('layer-norm', buildLayerNormTextEncoder());
    const session = await ort.InferenceSession.create(file);
    try {
      for (const [clipSkip, layer] of [[2, 'hidden_states.2'], [3, 'hidden_states.1']] as const) {
        const model = await modelWith(`layer-norm-${clipSkip}`, (m) => {
          m.clipSkip = clipSkip;
          m.graphs.text_encoder.path = file;
        });
        const got = await encodePrompts(model, PROMPT, '', false);
        const ids = model.tokenizer.encodeBatch([PROMPT]);
        const hidden = (await session.run({ input_ids: new ort.Tensor('int32', ids, [1, 77]) }))[layer]!.data as Float32Array;
        // LayerNorm by hand, in float64: (x − mean) / √(var + eps) · scale + bias.
        let worst = 0;
        for (let t = 0; t < 77; t++) {
          const row = hidden.subarray(t * 768, (t + 1) * 768);
          const mean = row.reduce((s, v) => s + v, 0) / 768;
          const variance = row.reduce((s, v) => s + (v - mean) ** 2, 0) / 768;
          for (let c = 0; c < 768; c++) {
            const want = ((row[c]! - mean) / Math.sqrt(variance + FINAL_NORM_EPS)) * FINAL_NORM_SCALE[c]! + FINAL_NORM_BIAS[c]!;
            worst = Math.max(worst, Math.abs(got.hidden[t * 768 + c]! - want));
          }
        }
        expect(worst, `clipSkip ${clipSkip}`).toBeLessThan(1e-3);
      }
    } finally {
      await session.release();
    }
  });
});

describe('clipSkip that the text encoder cannot give is refused at start', () => {
  it('a graph without hidden_states outputs: the message names the manifest field and the export option', async () => {
    const file = await writeGraph('no-hidden', buildTextEncoder({ hiddenStates: false }));
    await expect(modelWith('no-hidden', (m) => ((m.clipSkip = 2), (m.graphs.text_encoder.path = file)))).rejects.toThrow(
      /no-hidden\/model\.onnx: models\.demo-sd15\.clipSkip is 2, which needs the text encoder's hidden states, but the graph's outputs are 'last_hidden_state', 'pooler_output'; export it with output_hidden_states/,
    );
    // clipSkip 1 needs nothing of the kind.
    expect((await modelWith('no-hidden-1', (m) => (m.graphs.text_encoder.path = file))).clipSkip).toBeUndefined();
  });

  it('more layers skipped than the graph has', async () => {
    await expect(modelWith('too-deep', (m) => (m.clipSkip = 3))).rejects.toThrow(/models\.demo-sd15\.clipSkip is 3, but the graph has 2 layers \(hidden_states\.1 … hidden_states\.2\)/);
  });

  it('a last_hidden_state that is not a layer norm of the last hidden state', async () => {
    const file = await writeGraph('not-normed', buildLayerNormTextEncoder({ finalLayerNorm: false }));
    await expect(modelWith('not-normed', (m) => ((m.clipSkip = 2), (m.graphs.text_encoder.path = file)))).rejects.toThrow(
      /last_hidden_state is not a layer norm of hidden_states\.3/,
    );
  });

  it('values outside 1..12 are manifest errors', async () => {
    for (const clipSkip of [0, 13, 1.5]) {
      const file = await writeManifestVariant(dir, `bad-${clipSkip}`, (m) => (m.models['demo-sd15'].clipSkip = clipSkip));
      await expect(loadManifest(file)).rejects.toThrow(/models\.demo-sd15\.clipSkip/);
    }
  });
});
