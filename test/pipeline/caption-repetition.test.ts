/**
 * The captioner honours the repetition settings of its export's generation config
 * (repetition_penalty, no_repeat_ngram_size, min_length, min_new_tokens) as transformers does.
 * The fixture decoder (scripts/demo-models/looping-captioner.ts) loops like ViT-GPT2 without them.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLoopingCaptionDecoder, loopingGenerationConfig, loopingTokenizerJson } from '../../scripts/demo-models/looping-captioner.ts';
import { writeManifestVariant } from '../../scripts/demo-models/manifest-variants.ts';
import { rawImage } from '../../src/image/raw.ts';
import { loadCaptionerConfig } from '../../src/pipeline/caption-config.ts';
import { applyScoreRules, bannedByNgrams, NO_SCORE_RULES } from '../../src/pipeline/caption-scores.ts';
import { captionImage } from '../../src/pipeline/captioner.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions, type ModelSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';

let dir: string;
let sessions: PipelineSessions;
let model: ModelSessions;
const image = rawImage(new Uint8Array(32 * 32 * 3).fill(90), 32, 32, 3);

/** A folder with the looping decoder and its side files, generation_config.json carrying `rules`. */
async function exportFolder(name: string, rules: Record<string, number> = {}, file = 'generation_config.json'): Promise<string> {
  const folder = join(dir, name);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'decoder_model.onnx'), buildLoopingCaptionDecoder());
  await writeFile(join(folder, 'tokenizer.json'), loopingTokenizerJson());
  await writeFile(join(folder, file), loopingGenerationConfig(rules));
  return folder;
}

/** The caption the looping decoder gives with the side files of `folder`. */
async function captionWith(folder: string, beams?: number): Promise<string> {
  const captioner = await loadCaptionerConfig(folder);
  return captionImage(image, { ...model, captioner }, beams === undefined ? {} : { beams });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-caption-rules-'));
  const plain = await exportFolder('plain');
  const manifest = await writeManifestVariant(dir, 'looping', (m) => (m.models['demo-sd15'].graphs.captioner_decoder.path = join(plain, 'decoder_model.onnx')));
  sessions = await createSessions(await loadManifest(manifest), {
    executionProvider: { provider: 'cpu' },
    logger: pino({ level: 'silent' }),
    intraOpThreads: 1,
    roles: ['captioner_encoder', 'captioner_decoder'],
  });
  model = sessions.models.get('demo-sd15')!;
});

afterAll(async () => {
  await sessions?.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a ViT-GPT2-like decoder that loops', () => {
  it('loops to the length cap when its generation config has no repetition settings', async () => {
    expect(model.captioner!.rules).toMatchObject({ repetitionPenalty: 1, noRepeatNgramSize: 0, minLength: 0, minNewTokens: 0 });
    expect(await captionWith(join(dir, 'plain'))).toBe('a man in a man in a man in a man in a man in');
  });

  it('repetition_penalty weighs on every token already in the sequence, and breaks the loop', async () => {
    expect(await captionWith(await exportFolder('penalty', { repetition_penalty: 1.3 }))).toBe('a man in the hat');
  });

  it('no_repeat_ngram_size bans the token that would repeat an n-gram', async () => {
    expect(await captionWith(await exportFolder('ngram', { no_repeat_ngram_size: 2 }))).toBe('a man in a hat');
  });

  it('min_length and min_new_tokens keep the end token out until the caption is long enough', async () => {
    // min_length counts the start token: 8 ids = start + 7 generated tokens at least.
    expect(await captionWith(await exportFolder('min-length', { no_repeat_ngram_size: 2, min_length: 8 }))).toBe('a man in a hat in the hat');
    expect(await captionWith(await exportFolder('min-new', { no_repeat_ngram_size: 2, min_new_tokens: 7 }))).toBe('a man in a hat in the hat');
  });

  it('reads the settings from config.json when there is no generation_config.json', async () => {
    expect(await captionWith(await exportFolder('legacy', { no_repeat_ngram_size: 2 }, 'config.json'))).toBe('a man in a hat');
  });

  it('beam search honours them too', async () => {
    // Beam search prefers the short "a hat" here; min_length forbids it, no_repeat_ngram_size the loop.
    expect(await captionWith(join(dir, 'plain'), 3)).toBe('a hat');
    const caption = await captionWith(await exportFolder('beam-min-length', { no_repeat_ngram_size: 2, min_length: 8 }), 3);
    const words = caption.split(' ');
    const bigrams = words.slice(1).map((w, i) => `${words[i]} ${w}`);
    expect(words.length).toBeGreaterThanOrEqual(7);
    expect(new Set(bigrams).size).toBe(bigrams.length);
  });
});

describe('the score rules', () => {
  it('repetition_penalty divides positive scores and multiplies negative ones, once per distinct token', () => {
    const scores = Float64Array.of(2, -2, 4, 1);
    applyScoreRules(scores, [0, 1, 1], { ...NO_SCORE_RULES, repetitionPenalty: 2 });
    expect([...scores]).toEqual([1, -4, 4, 1]);
  });

  it('no_repeat_ngram_size bans what followed earlier copies of the last n − 1 tokens', () => {
    expect([...bannedByNgrams([5, 1, 2, 1], 2)].sort()).toEqual([2]);
    expect([...bannedByNgrams([5, 1, 2, 5, 1], 3)]).toEqual([2]);
    expect([...bannedByNgrams([5, 1, 2], 1)].sort()).toEqual([1, 2, 5]);
    expect(bannedByNgrams([5], 3).size).toBe(0);
  });

  it('min_length bans every end token while the sequence is shorter', () => {
    const rules = { ...NO_SCORE_RULES, eosIds: [0, 3], minLength: 3 };
    const short = Float64Array.of(1, 1, 1, 1);
    applyScoreRules(short, [7, 1], rules);
    expect([...short]).toEqual([-Infinity, 1, 1, -Infinity]);
    const long = Float64Array.of(1, 1, 1, 1);
    applyScoreRules(long, [7, 1, 2], rules);
    expect([...long]).toEqual([1, 1, 1, 1]);
  });
});
