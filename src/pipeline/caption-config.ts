/**
 * The side files of an encoder–decoder captioner export (ViT-GPT2, BLIP, the demo captioner),
 * read once at start: tokenizer.json (to turn generated ids back into text),
 * generation_config.json / config.json (start and end ids, length cap, beams, and the repetition
 * settings decoding honours: caption-scores.ts) and
 * preprocessor_config.json (input size and normalisation). They lie beside the decoder graph, as
 * optimum writes them (docs/models.md §2.4).
 *
 * Only decoding is needed (the captioner is never fed text), so any tokenizer.json model type
 * works: its vocabulary is inverted and the `decoder` section says how tokens join (GPT-2 byte
 * level, WordPiece "##" continuations, SentencePiece "▁", or plain words).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ScoreRules } from './caption-scores.ts';
import { bytesToUnicode } from './clip-bpe.ts';

export type TokenJoin = 'byte_level' | 'wordpiece' | 'metaspace' | 'words';

export interface CaptionerConfig {
  /** The folder the files came from (for messages). */
  readonly dir: string;
  /** id → token text (undefined for ids the vocabulary does not name). */
  readonly tokens: readonly (string | undefined)[];
  /** Ids never shown in a caption (added tokens marked special, start, end, pad). */
  readonly special: ReadonlySet<number>;
  readonly join: TokenJoin;
  /** First decoder input (decoder_start_token_id, else bos_token_id). */
  readonly startId: number;
  readonly eosIds: readonly number[];
  /** Generated tokens at most (max_new_tokens, else max_length − 1, else 20). */
  readonly maxNewTokens: number;
  readonly numBeams: number;
  /** Length penalty of beam search (HF: score / length^penalty). */
  readonly lengthPenalty: number;
  /** How the decoder's scores are changed before each choice (repetition_penalty, no_repeat_ngram_size, min_length, min_new_tokens). */
  readonly rules: ScoreRules;
  readonly image: CaptionImageConfig;
}

export interface CaptionImageConfig {
  /** Fixed input size, or `shortestEdge` to resize the short side and centre-crop a square. */
  readonly width: number;
  readonly height: number;
  readonly crop: boolean;
  readonly mean: readonly [number, number, number];
  readonly std: readonly [number, number, number];
}

export class CaptionerConfigError extends Error {
  override readonly name = 'CaptionerConfigError';
}

const DEFAULT_MAX_NEW_TOKENS = 20;
const DEFAULT_IMAGE: CaptionImageConfig = { width: 224, height: 224, crop: false, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] };

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

async function readJson(file: string, required: boolean): Promise<Json | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (!required && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CaptionerConfigError(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new CaptionerConfigError(`${file}: not valid JSON (${(err as Error).message})`);
  }
  if (!isRecord(data)) throw new CaptionerConfigError(`${file}: expected a JSON object`);
  return data;
}

/** How the tokenizer's `decoder` section joins tokens (Sequence decoders: the first one that decides). */
function joinOf(decoder: unknown, modelType: unknown): TokenJoin {
  if (isRecord(decoder)) {
    switch (decoder['type']) {
      case 'ByteLevel':
        return 'byte_level';
      case 'WordPiece':
        return 'wordpiece';
      case 'Metaspace':
        return 'metaspace';
      case 'Sequence':
        for (const d of Array.isArray(decoder['decoders']) ? decoder['decoders'] : []) {
          const j = joinOf(d, undefined);
          if (j !== 'words') return j;
        }
    }
  }
  return modelType === 'WordPiece' ? 'wordpiece' : 'words';
}

/** tokenizer.json → id → token, specials and the join rule. */
export function parseCaptionTokenizer(data: Json, file: string): Pick<CaptionerConfig, 'tokens' | 'special' | 'join'> {
  const model = data['model'];
  if (!isRecord(model) || !isRecord(model['vocab'])) throw new CaptionerConfigError(`${file}: expected model.vocab`);
  const tokens: (string | undefined)[] = [];
  const put = (token: string, id: unknown): void => {
    if (!isId(id) || id > 10_000_000) throw new CaptionerConfigError(`${file}: token ${JSON.stringify(token)} has a bad id ${String(id)}`);
    tokens[id] = token;
  };
  // WordPiece/BPE/WordLevel vocabularies are token → id objects; Unigram's is a [token, score] list.
  for (const [token, id] of Object.entries(model['vocab'])) put(token, id);
  const special = new Set<number>();
  for (const entry of Array.isArray(data['added_tokens']) ? data['added_tokens'] : []) {
    if (!isRecord(entry) || typeof entry['content'] !== 'string') continue;
    put(entry['content'], entry['id']);
    if (entry['special'] === true) special.add(entry['id'] as number);
  }
  return { tokens, special, join: joinOf(data['decoder'], model['type']) };
}

function firstId(...values: unknown[]): number | undefined {
  for (const v of values) {
    if (isId(v)) return v;
    if (Array.isArray(v) && isId(v[0])) return v[0];
  }
  return undefined;
}

function idList(v: unknown): number[] {
  if (isId(v)) return [v];
  return Array.isArray(v) ? v.filter(isId) : [];
}

function triple(v: unknown, fallback: readonly [number, number, number]): readonly [number, number, number] {
  if (typeof v === 'number' && v > 0) return [v, v, v];
  if (Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'number')) return [v[0] as number, v[1] as number, v[2] as number];
  return fallback;
}

/** preprocessor_config.json → input size and normalisation (ViT: 224², mean/std 0.5; BLIP: 384², CLIP's). */
export function parsePreprocessor(data: Json | undefined): CaptionImageConfig {
  if (!data) return DEFAULT_IMAGE;
  const size = data['size'];
  let width = DEFAULT_IMAGE.width;
  let height = DEFAULT_IMAGE.height;
  let crop = false;
  if (typeof size === 'number') width = height = size;
  else if (isRecord(size)) {
    if (isId(size['height']) && isId(size['width'])) {
      height = size['height'];
      width = size['width'];
    } else if (isId(size['shortest_edge'])) {
      width = height = size['shortest_edge'];
      crop = true;
    }
  }
  const cropSize = data['crop_size'];
  if (data['do_center_crop'] === true && isRecord(cropSize) && isId(cropSize['height']) && isId(cropSize['width'])) {
    height = cropSize['height'];
    width = cropSize['width'];
    crop = true;
  }
  const normalize = data['do_normalize'] !== false;
  const std = triple(data['image_std'], DEFAULT_IMAGE.std);
  return {
    width,
    height,
    crop,
    mean: normalize ? triple(data['image_mean'], DEFAULT_IMAGE.mean) : [0, 0, 0],
    // A zero std would divide by zero: such a file is broken, fall back to the default.
    std: normalize ? (std.every((v) => v > 0) ? std : DEFAULT_IMAGE.std) : [1, 1, 1],
  };
}

/** Reads the captioner's side files from `dir` (tokenizer.json required; the others optional). */
export async function loadCaptionerConfig(dir: string): Promise<CaptionerConfig> {
  const tokenizerFile = join(dir, 'tokenizer.json');
  const tok = parseCaptionTokenizer((await readJson(tokenizerFile, true))!, tokenizerFile);
  const gen = (await readJson(join(dir, 'generation_config.json'), false)) ?? {};
  const cfg = (await readJson(join(dir, 'config.json'), false)) ?? {};
  const decoderCfg = isRecord(cfg['decoder']) ? cfg['decoder'] : {};
  const pick = (key: string): unknown => gen[key] ?? cfg[key] ?? decoderCfg[key];
  const startId = firstId(pick('decoder_start_token_id'), pick('bos_token_id'));
  if (startId === undefined) {
    throw new CaptionerConfigError(`${dir}: no decoder_start_token_id or bos_token_id in generation_config.json or config.json`);
  }
  const eosIds = idList(pick('eos_token_id'));
  if (eosIds.length === 0) throw new CaptionerConfigError(`${dir}: no eos_token_id in generation_config.json or config.json`);
  const pad = firstId(pick('pad_token_id'));
  const maxNew = pick('max_new_tokens');
  const maxLength = pick('max_length');
  const beams = pick('num_beams');
  const penalty = pick('length_penalty');
  const repetition = pick('repetition_penalty');
  const ngram = pick('no_repeat_ngram_size');
  const minLength = pick('min_length');
  const minNew = pick('min_new_tokens');
  const special = new Set([...tok.special, startId, ...eosIds, ...(pad === undefined ? [] : [pad])]);
  return {
    dir,
    ...tok,
    special,
    startId,
    eosIds,
    maxNewTokens: isId(maxNew) && maxNew > 0 ? maxNew : isId(maxLength) && maxLength > 1 ? maxLength - 1 : DEFAULT_MAX_NEW_TOKENS,
    numBeams: isId(beams) && beams > 0 ? beams : 1,
    lengthPenalty: typeof penalty === 'number' ? penalty : 1,
    // transformers' defaults (1, 0, 0, 0) turn each rule off; a bad value is ignored the same way.
    rules: {
      eosIds,
      repetitionPenalty: typeof repetition === 'number' && repetition > 0 ? repetition : 1,
      noRepeatNgramSize: isId(ngram) ? ngram : 0,
      minLength: isId(minLength) ? minLength : 0,
      minNewTokens: isId(minNew) ? minNew : 0,
    },
    image: parsePreprocessor(await readJson(join(dir, 'preprocessor_config.json'), false)),
  };
}

const BYTE_OF_CHAR = new Map<string, number>(bytesToUnicode().map((c, b) => [c, b]));
const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Generated ids → caption text: specials dropped, tokens joined as the tokenizer's decoder does, whitespace tidied. */
export function decodeCaption(ids: readonly number[], config: Pick<CaptionerConfig, 'tokens' | 'special' | 'join'>): string {
  const parts = ids.filter((id) => !config.special.has(id)).map((id) => config.tokens[id] ?? '');
  let text: string;
  switch (config.join) {
    case 'byte_level': {
      const bytes: number[] = [];
      for (const ch of parts.join('')) {
        const b = BYTE_OF_CHAR.get(ch);
        if (b !== undefined) bytes.push(b);
        else bytes.push(...new TextEncoder().encode(ch));
      }
      text = utf8.decode(Uint8Array.from(bytes));
      break;
    }
    case 'wordpiece':
      text = parts.join(' ').replace(/ ##/g, '');
      break;
    case 'metaspace':
      text = parts.join('').replace(/▁/g, ' ');
      break;
    case 'words':
      text = parts.join(' ');
  }
  return text.replace(/\s+/g, ' ').trim();
}
