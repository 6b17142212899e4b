/**
 * The captioner on the demo graphs (CPU): captions name the image's colours, are deterministic,
 * respect the length cap, and beam search agrees with greedy where the grammar leaves no doubt;
 * the side files of real exports (GPT-2 byte level, WordPiece, SentencePiece) decode to text.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoSessions } from '../helpers/demo-sessions.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { decodeCaption, loadCaptionerConfig, parseCaptionTokenizer, parsePreprocessor } from '../../src/pipeline/caption-config.ts';
import { capCaption, captionImage, MAX_CAPTION_CHARS } from '../../src/pipeline/captioner.ts';
import { type ModelSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { bytesToUnicode } from '../../src/pipeline/clip-bpe.ts';

const CAPTIONER_DIR = fileURLToPath(new URL('../../models/demo/captioner', import.meta.url));

let sessions: PipelineSessions;
let model: ModelSessions;
let dir: string;

beforeAll(async () => {
  sessions = await demoSessions(['captioner_encoder', 'captioner_decoder']);
  model = sessions.models.get('demo-sd15')!;
  dir = await mkdtemp(join(tmpdir(), 'qrart-captioner-'));
});

afterAll(async () => {
  await sessions?.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function paint(width: number, height: number, rgbAt: (x: number, y: number) => readonly number[]): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(rgbAt(x, y).map((v) => Math.round(v * 255)), (y * width + x) * 3);
  return rawImage(data, width, height, 3);
}

const BLUE = [0.1, 0.2, 0.85];
const ORANGE = [1, 0.55, 0.08];

describe('captionImage on the demo captioner', () => {
  it('names the dominant colour, and a second one covering enough of the image', async () => {
    expect(await captionImage(paint(300, 200, () => BLUE), model)).toBe('a blue abstract painting');
    expect(await captionImage(paint(300, 200, (x) => (x < 180 ? BLUE : ORANGE)), model)).toBe('a blue and orange abstract painting');
    // A grey image (1 channel) works too.
    expect(await captionImage(rawImage(new Uint8Array(64 * 64).fill(10), 64, 64, 1), model)).toBe('a black abstract painting');
  });

  it('is deterministic, and beam search agrees with greedy on the demo grammar', async () => {
    const image = paint(256, 128, (x, y) => (y < 50 ? [0.95, 0.95, 0.95] : x < 100 ? [0.15, 0.65, 0.2] : [0.05, 0.05, 0.05]));
    const greedy = await captionImage(image, model, { beams: 1 });
    expect(greedy).toMatch(/^a \w+ and \w+ abstract painting$/);
    expect(await captionImage(image, model, { beams: 1 })).toBe(greedy);
    expect(await captionImage(image, model, { beams: 3 })).toBe(greedy);
  });

  it('stops at the length cap', async () => {
    expect(await captionImage(paint(64, 64, () => BLUE), model, { maxTokens: 2 })).toBe('a blue');
    await expect(captionImage(paint(64, 64, () => BLUE), model, { maxTokens: 0 })).rejects.toThrow(/maxTokens must be a positive integer/);
  });

  it('stops when aborted', async () => {
    const ac = new AbortController();
    ac.abort(new Error('cancelled by test'));
    await expect(captionImage(paint(64, 64, () => BLUE), model, { signal: ac.signal })).rejects.toThrow(/cancelled by test/);
  });

  it('reads the demo export side files (start/end ids, length cap from max_length, 224² input)', () => {
    const c = model.captioner!;
    expect([c.startId, c.eosIds, c.maxNewTokens, c.numBeams, c.join]).toEqual([1, [2], 11, 1, 'words']);
    expect([c.image.width, c.image.height, c.image.mean, c.image.std]).toEqual([224, 224, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]);
  });
});

describe('caption side files of other exports', () => {
  it('GPT-2 byte-level tokens join without spaces and decode UTF-8; specials are dropped', () => {
    const b2u = bytesToUnicode();
    const bl = (s: string): string => Array.from(Buffer.from(s, 'utf8'), (b) => b2u[b]!).join('');
    const tok = parseCaptionTokenizer(
      {
        model: { type: 'BPE', vocab: { [bl('a')]: 0, [bl(' dog')]: 1, [bl(' café')]: 2, '<|endoftext|>': 3 }, merges: [] },
        added_tokens: [{ id: 3, content: '<|endoftext|>', special: true }],
        decoder: { type: 'ByteLevel' },
      },
      'gpt2/tokenizer.json',
    );
    expect(tok.join).toBe('byte_level');
    expect(decodeCaption([0, 1, 2, 3], tok)).toBe('a dog café');
  });

  it('WordPiece joins ## pieces; SentencePiece turns ▁ into spaces; unknown ids vanish', () => {
    const wp = parseCaptionTokenizer({ model: { type: 'WordPiece', vocab: { a: 0, sun: 1, '##set': 2, '[SEP]': 3 } }, added_tokens: [{ id: 3, content: '[SEP]', special: true }] }, 'bert');
    expect(wp.join).toBe('wordpiece');
    expect(decodeCaption([0, 1, 2, 3, 99], wp)).toBe('a sunset');
    const sp = parseCaptionTokenizer({ model: { vocab: { '▁a': 0, '▁red': 1, '▁sky': 2 } }, decoder: { type: 'Sequence', decoders: [{ type: 'Replace' }, { type: 'Metaspace' }] } }, 'sp');
    expect(decodeCaption([0, 1, 2], sp)).toBe('a red sky');
  });

  it('preprocessor sizes: fixed, shortest edge with crop, CLIP normalisation', () => {
    expect(parsePreprocessor({ size: { height: 384, width: 384 }, image_mean: [0.48, 0.45, 0.4], image_std: [0.26, 0.26, 0.27] })).toEqual({
      width: 384,
      height: 384,
      crop: false,
      mean: [0.48, 0.45, 0.4],
      std: [0.26, 0.26, 0.27],
    });
    expect(parsePreprocessor({ size: { shortest_edge: 224 } })).toMatchObject({ width: 224, height: 224, crop: true });
    expect(parsePreprocessor({ do_normalize: false })).toMatchObject({ mean: [0, 0, 0], std: [1, 1, 1] });
    expect(parsePreprocessor(undefined)).toMatchObject({ width: 224, height: 224 });
  });

  it('a folder without tokenizer.json or without start ids fails naming the file', async () => {
    await expect(loadCaptionerConfig(dir)).rejects.toThrow(/tokenizer\.json: cannot read \(ENOENT\)/);
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify({ model: { type: 'WordLevel', vocab: { a: 0 } } }));
    await expect(loadCaptionerConfig(dir)).rejects.toThrow(/no decoder_start_token_id or bos_token_id/);
    await writeFile(join(dir, 'config.json'), JSON.stringify({ decoder: { bos_token_id: 0, eos_token_id: [0] }, num_beams: 4, max_new_tokens: 7 }));
    const c = await loadCaptionerConfig(dir);
    expect([c.startId, c.eosIds, c.numBeams, c.maxNewTokens]).toEqual([0, [0], 4, 7]);
  });

  it('the demo folder loads on its own as well', async () => {
    const c = await loadCaptionerConfig(CAPTIONER_DIR);
    expect(c.tokens.slice(0, 7)).toEqual(['<pad>', '<bos>', '<eos>', 'a', 'and', 'abstract', 'painting']);
  });

  it('caps long captions at a word boundary', () => {
    const long = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    const capped = capCaption(long);
    expect(capped.length).toBeLessThanOrEqual(MAX_CAPTION_CHARS);
    expect(long.startsWith(capped)).toBe(true);
    expect(long[capped.length]).toBe(' ');
    expect(capCaption('short')).toBe('short');
  });
});
