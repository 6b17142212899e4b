/**
 * CLIP's byte-level BPE tokenizer, as Stable Diffusion 1.5 uses it (openai/clip-vit-large-patch14):
 * prompt text → exactly 77 int32 ids = bos, content (at most 75), eos, then padding.
 *
 * Reference behaviour is OpenAI's simple_tokenizer (the one the weights were trained with) and
 * Hugging Face's CLIPTokenizer: normalize (NFC, a small part of ftfy, html unescape, whitespace,
 * lowercase), split with CLIP's regex, map UTF-8 bytes to printable characters (GPT-2 table),
 * merge by rank, look ids up. ftfy itself is not reproduced (see normalizeText).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { noTokenizerMessage, readTokenizerGraph } from './tokenizer-graph.ts';

export const CLIP_MAX_LENGTH = 77;
export const DEFAULT_BOS_TOKEN = '<|startoftext|>';
export const DEFAULT_EOS_TOKEN = '<|endoftext|>';
/** The real CLIP ids, used only when a vocabulary lacks the special tokens. */
export const DEFAULT_BOS_ID = 49406;
export const DEFAULT_EOS_ID = 49407;
export const END_OF_WORD = '</w>';
/** OpenAI and Hugging Face read only this many merges from merges.txt (49152 - 256 - 2). */
export const MERGES_TXT_LIMIT = 48_894;

// ---------------------------------------------------------------------------------------------
// Byte-level alphabet

/**
 * The 256 byte characters in CLIP's vocabulary order: printable Latin-1 bytes map to themselves
 * and come first, the rest map to U+0100.. in byte order. CLIP's ids 0..255 are these characters
 * and 256..511 the same with `</w>`, which is why single-character tokens have fixed ids.
 */
function buildAlphabet(): { order: number[]; charOf: string[] } {
  const order: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) order.push(b);
  for (let b = 0xa1; b <= 0xac; b++) order.push(b);
  for (let b = 0xae; b <= 0xff; b++) order.push(b);
  const charOf = new Array<string>(256);
  for (const b of order) charOf[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (charOf[b] === undefined) {
      charOf[b] = String.fromCharCode(256 + n++);
      order.push(b);
    }
  }
  return { order, charOf };
}

const ALPHABET = buildAlphabet();
const BYTE_OF_CHAR = new Map<string, number>(ALPHABET.charOf.map((c, b) => [c, b]));
const utf8 = new TextEncoder();

/** byte value → its character (GPT-2's bytes_to_unicode). */
export function bytesToUnicode(): readonly string[] {
  return ALPHABET.charOf;
}

/** The 256 byte characters in vocabulary order (index = CLIP id of the bare character). */
export function byteAlphabet(): string[] {
  return ALPHABET.order.map((b) => ALPHABET.charOf[b]!);
}

/** Text → its UTF-8 bytes written as byte characters. */
export function toByteLevel(text: string): string {
  let out = '';
  for (const b of utf8.encode(text)) out += ALPHABET.charOf[b]!;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Normalization and pre-tokenization

// Python's str.isspace set: CLIP collapses whitespace with Python's re, whose \s is wider than
// JavaScript's in \x1c-\x1f and \x85 and narrower in \ufeff.
const WS_CLASS = '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const WS_RUN = new RegExp(`[${WS_CLASS}]+`, 'g');

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', AMP: '&', lt: '<', LT: '<', gt: '>', GT: '>', quot: '"', QUOT: '"', apos: "'", nbsp: '\u00a0',
};
// Semicolons are optional for numeric and legacy entities, as in Python's html.unescape.
const ENTITY = /&(?:#[xX]([0-9a-fA-F]+);?|#([0-9]+);?|(amp|AMP|lt|LT|gt|GT|quot|QUOT|nbsp);?|(apos);)/g;

function unescapeHtml(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (_m, hex: string | undefined, dec: string | undefined, legacy: string | undefined, apos: string | undefined) => {
    if (legacy ?? apos) return NAMED_ENTITIES[(legacy ?? apos)!]!;
    const cp = hex !== undefined ? Number.parseInt(hex, 16) : Number.parseInt(dec!, 10);
    // Invalid code points become U+FFFD as in html.unescape (its cp1252 remap of 0x80-0x9f is not copied).
    if (!Number.isFinite(cp) || cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
    return String.fromCodePoint(cp);
  });
}

/**
 * CLIP's text cleanup: ftfy.fix_text, html.unescape twice, whitespace collapse, lowercase.
 * ftfy is not available, so only the parts of it that change ordinary prompts are kept: NFC and
 * straight quotes (so "don’t" splits like "don't"). Mojibake repair, width folding and control
 * character removal are not done.
 */
export function normalizeText(text: string): string {
  let t = text.normalize('NFC');
  t = t.replace(/[\u02bc\u2018-\u201b]/g, "'").replace(/[\u201c-\u201f]/g, '"');
  t = unescapeHtml(unescapeHtml(t));
  t = t.replace(WS_RUN, ' ').replace(/^ | $/g, '');
  return t.toLowerCase();
}

const escapeRegExp = (s: string): string => s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

/** CLIP's split: special tokens, English contractions, letter runs, single digits, other runs. */
export function preTokenizer(specialTokens: readonly string[] = [DEFAULT_BOS_TOKEN, DEFAULT_EOS_TOKEN]): RegExp {
  const specials = [...specialTokens].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const parts = [...specials, "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", '\\p{L}+', '\\p{N}', `[^${WS_CLASS}\\p{L}\\p{N}]+`];
  return new RegExp(parts.join('|'), 'gu');
}

const DEFAULT_SPLIT = preTokenizer();

/** Words of already normalized text. */
export function preTokenize(normalized: string, pattern: RegExp = DEFAULT_SPLIT): string[] {
  return normalized.match(pattern) ?? [];
}

// ---------------------------------------------------------------------------------------------
// BPE

export type MergeRanks = ReadonlyMap<string, number>;

export const mergeKey = (a: string, b: string): string => `${a} ${b}`;

/** Ranks from merges in priority order; a repeated pair keeps its last rank, as Python's dict() does. */
export function mergeRanks(merges: ReadonlyArray<readonly [string, string]>): Map<string, number> {
  const ranks = new Map<string, number>();
  merges.forEach(([a, b], i) => ranks.set(mergeKey(a, b), i));
  return ranks;
}

/**
 * One word (byte characters) → its BPE symbols. The last character carries the end-of-word
 * suffix from the start. Each round merges every occurrence, left to right and without overlap,
 * of the adjacent pair with the lowest rank, exactly as CLIP's bpe() does; onMerge sees each round.
 */
export function bpe(word: string, ranks: MergeRanks, onMerge?: (a: string, b: string) => void, suffix = END_OF_WORD): string[] {
  const chars = Array.from(word);
  if (chars.length === 0) return [];
  let symbols = chars;
  symbols[symbols.length - 1] += suffix;
  while (symbols.length > 1) {
    let best = Infinity;
    let first = '';
    let second = '';
    for (let i = 0; i < symbols.length - 1; i++) {
      const rank = ranks.get(mergeKey(symbols[i]!, symbols[i + 1]!));
      if (rank !== undefined && rank < best) {
        best = rank;
        first = symbols[i]!;
        second = symbols[i + 1]!;
      }
    }
    if (best === Infinity) break;
    onMerge?.(first, second);
    const next: string[] = [];
    for (let i = 0; i < symbols.length; ) {
      if (i < symbols.length - 1 && symbols[i] === first && symbols[i + 1] === second) {
        next.push(first + second);
        i += 2;
      } else {
        next.push(symbols[i]!);
        i += 1;
      }
    }
    symbols = next;
  }
  return symbols;
}

// ---------------------------------------------------------------------------------------------
// The tokenizer

export interface ClipTokenizerInit {
  vocab: ReadonlyMap<string, number> | Readonly<Record<string, number>>;
  /** In priority order (rank 0 first). */
  merges: ReadonlyArray<readonly [string, string]>;
  bosToken?: string;
  eosToken?: string;
  /** SD1.5 pads with its eos token; SD2-style exports name "!" here. */
  padToken?: string;
  maxLength?: number;
  endOfWordSuffix?: string;
}

export interface DecodeOptions {
  /** Leave out bos, eos and pad ids (default true). */
  skipSpecial?: boolean;
}

// Bounds memory in a long-lived worker fed arbitrary prompts; refilling is cheap.
const CACHE_LIMIT = 20_000;

export class ClipTokenizer {
  readonly bosId: number;
  readonly eosId: number;
  readonly padId: number;
  /** CLIP maps unknown tokens to its eos token. */
  readonly unkId: number;
  readonly maxLength: number;
  readonly bosToken: string;
  readonly eosToken: string;
  readonly vocabSize: number;

  private readonly vocab: ReadonlyMap<string, number>;
  private readonly tokenOf = new Map<number, string>();
  private readonly ranks: MergeRanks;
  private readonly suffix: string;
  private readonly split: RegExp;
  private readonly specials: ReadonlySet<string>;
  private readonly cache = new Map<string, readonly string[]>();

  constructor(init: ClipTokenizerInit) {
    this.vocab = init.vocab instanceof Map ? init.vocab : new Map(Object.entries(init.vocab));
    for (const [token, id] of this.vocab) {
      if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) throw new RangeError(`vocabulary id of ${JSON.stringify(token)} is not an int32: ${id}`);
      // First token wins when two share an id, so decode is stable.
      if (!this.tokenOf.has(id)) this.tokenOf.set(id, token);
    }
    this.vocabSize = this.vocab.size;
    this.ranks = mergeRanks(init.merges);
    this.suffix = init.endOfWordSuffix ?? END_OF_WORD;
    this.bosToken = init.bosToken ?? DEFAULT_BOS_TOKEN;
    this.eosToken = init.eosToken ?? DEFAULT_EOS_TOKEN;
    this.bosId = this.vocab.get(this.bosToken) ?? DEFAULT_BOS_ID;
    this.eosId = this.vocab.get(this.eosToken) ?? DEFAULT_EOS_ID;
    this.unkId = this.eosId;
    this.padId = init.padToken === undefined ? this.eosId : (this.vocab.get(init.padToken) ?? this.eosId);
    this.maxLength = init.maxLength ?? CLIP_MAX_LENGTH;
    if (!Number.isInteger(this.maxLength) || this.maxLength < 2) throw new RangeError(`maxLength must be an integer >= 2, got ${this.maxLength}`);
    this.specials = new Set([this.bosToken, this.eosToken]);
    this.split = preTokenizer([...this.specials]);
    if (!this.tokenOf.has(this.bosId)) this.tokenOf.set(this.bosId, this.bosToken);
    if (!this.tokenOf.has(this.eosId)) this.tokenOf.set(this.eosId, this.eosToken);
  }

  /**
   * Reads a tokenizer folder: vocab.json + merges.txt (preferred, what CLIPTokenizer reads),
   * tokenizer.json (Hugging Face tokenizers) or a tokenizer graph (OnnxStack/Amuse). Special token names come from
   * special_tokens_map.json / tokenizer_config.json when present.
   */
  static async load(dir: string, options: { maxLength?: number } = {}): Promise<ClipTokenizer> {
    const specials = await readSpecialTokens(dir);
    const vocabText = await readOptional(join(dir, 'vocab.json'));
    const mergesText = await readOptional(join(dir, 'merges.txt'));
    let init: ClipTokenizerInit;
    if (vocabText !== undefined && mergesText !== undefined) {
      init = { vocab: parseVocabJson(vocabText, join(dir, 'vocab.json')), merges: parseMergesTxt(mergesText, join(dir, 'merges.txt')) };
    } else {
      const tokenizerText = await readOptional(join(dir, 'tokenizer.json'));
      if (tokenizerText !== undefined) init = parseTokenizerJson(tokenizerText, join(dir, 'tokenizer.json'));
      else {
        // OnnxStack/Amuse: only a tokenizer graph, whose CLIPTokenizer node carries vocab and merges (tokenizer-graph.ts).
        const graph = await readTokenizerGraph(dir);
        if (!graph) throw new Error(await noTokenizerMessage(dir));
        const vocab = parseVocabJson(graph.vocab, `${graph.path} (vocab attribute)`);
        for (const [token, id] of graph.addedTokens) if (!vocab.has(token)) vocab.set(token, id);
        init = { vocab, merges: parseMergesTxt(graph.merges, `${graph.path} (merges attribute)`) };
      }
    }
    return new ClipTokenizer({ ...init, ...specials, ...(options.maxLength !== undefined ? { maxLength: options.maxLength } : {}) });
  }

  /** Normalized words of a prompt (what BPE runs on), for debugging and tests. */
  words(text: string): string[] {
    return preTokenize(normalizeText(text), this.split);
  }

  /** BPE tokens (byte characters, `</w>` ends a word) of the whole prompt, untruncated. */
  tokenize(text: string): string[] {
    const out: string[] = [];
    for (const word of this.words(text)) out.push(...this.wordTokens(word));
    return out;
  }

  /** Content ids without bos/eos, untruncated: its length says whether encode() will truncate. */
  encodeContent(text: string): number[] {
    const ids: number[] = [];
    for (const token of this.tokenize(text)) this.pushIds(token, ids);
    return ids;
  }

  /** Exactly maxLength ids: bos, up to maxLength - 2 content ids, eos, then pad. */
  encode(text: string): Int32Array {
    const out = new Int32Array(this.maxLength);
    this.encodeInto(text, out, 0);
    return out;
  }

  /** Row-major [texts.length, maxLength], ready to be an int32 input_ids tensor. */
  encodeBatch(texts: readonly string[]): Int32Array {
    const out = new Int32Array(texts.length * this.maxLength);
    texts.forEach((text, row) => this.encodeInto(text, out, row * this.maxLength));
    return out;
  }

  /** Ids → text; words come back separated by single spaces (CLIP does not keep spacing). */
  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    const skip = options.skipSpecial ?? true;
    const bytes: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (skip && (id === this.bosId || id === this.eosId || id === this.padId)) continue;
      const token = this.tokenOf.get(id);
      if (token === undefined) throw new RangeError(`id ${id} is not in the vocabulary`);
      const endsWord = token.endsWith(this.suffix) && token.length > this.suffix.length;
      const body = endsWord ? token.slice(0, -this.suffix.length) : token;
      for (const ch of body) {
        const b = BYTE_OF_CHAR.get(ch);
        if (b !== undefined) bytes.push(b);
        else bytes.push(...utf8.encode(ch));
      }
      if (endsWord) bytes.push(0x20);
    }
    return new TextDecoder('utf-8').decode(new Uint8Array(bytes)).trim();
  }

  private encodeInto(text: string, out: Int32Array, offset: number): void {
    const ids = this.encodeContent(text);
    const n = Math.min(ids.length, this.maxLength - 2);
    out.fill(this.padId, offset, offset + this.maxLength);
    out[offset] = this.bosId;
    for (let i = 0; i < n; i++) out[offset + 1 + i] = ids[i]!;
    out[offset + 1 + n] = this.eosId;
  }

  private wordTokens(word: string): readonly string[] {
    if (this.specials.has(word)) return [word];
    let tokens = this.cache.get(word);
    if (tokens === undefined) {
      tokens = bpe(toByteLevel(word), this.ranks, undefined, this.suffix);
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(word, tokens);
    }
    return tokens;
  }

  /** A token missing from the vocabulary (inconsistent files) falls back to its byte characters. */
  private pushIds(token: string, out: number[]): void {
    const id = this.vocab.get(token);
    if (id !== undefined) {
      out.push(id);
      return;
    }
    const endsWord = token.endsWith(this.suffix) && token.length > this.suffix.length;
    const chars = Array.from(endsWord ? token.slice(0, -this.suffix.length) : token);
    chars.forEach((ch, i) => {
      const piece = endsWord && i === chars.length - 1 ? ch + this.suffix : ch;
      out.push(this.vocab.get(piece) ?? this.unkId);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// File formats

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${path}: not valid JSON (${(err as Error).message})`);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** vocab.json: {"token": id, ...}. */
export function parseVocabJson(text: string, path = 'vocab.json'): Map<string, number> {
  const data = parseJson(text, path);
  if (!isRecord(data)) throw new Error(`${path}: expected an object of token → id`);
  const vocab = new Map<string, number>();
  for (const [token, id] of Object.entries(data)) {
    if (typeof id !== 'number') throw new Error(`${path}: id of ${JSON.stringify(token)} is not a number`);
    vocab.set(token, id);
  }
  return vocab;
}

/** merges.txt: an optional `#version` line, then one "a b" pair per line in priority order. */
export function parseMergesTxt(text: string, path = 'merges.txt'): [string, string][] {
  const lines = text.split(/\r?\n/);
  if (lines[0]?.startsWith('#version')) lines.shift();
  const merges: [string, string][] = [];
  for (const line of lines) {
    if (line.length === 0) continue;
    const parts = line.split(' ');
    if (parts.length !== 2 || !parts[0] || !parts[1]) throw new Error(`${path}: bad merge line ${JSON.stringify(line)}`);
    merges.push([parts[0], parts[1]]);
    if (merges.length === MERGES_TXT_LIMIT) break;
  }
  return merges;
}

/** tokenizer.json: model.vocab and model.merges ("a b" strings or [a, b] pairs), plus added_tokens. */
export function parseTokenizerJson(text: string, path = 'tokenizer.json'): ClipTokenizerInit {
  const data = parseJson(text, path);
  const model = isRecord(data) ? data['model'] : undefined;
  if (!isRecord(model) || !isRecord(model['vocab']) || !Array.isArray(model['merges'])) {
    throw new Error(`${path}: expected model.vocab and model.merges`);
  }
  if (model['type'] !== undefined && model['type'] !== 'BPE') throw new Error(`${path}: model.type is ${String(model['type'])}, not BPE`);
  const vocab = parseVocabJson(JSON.stringify(model['vocab']), path);
  const added = isRecord(data) && Array.isArray(data['added_tokens']) ? data['added_tokens'] : [];
  for (const entry of added) {
    if (isRecord(entry) && typeof entry['content'] === 'string' && typeof entry['id'] === 'number' && !vocab.has(entry['content'])) {
      vocab.set(entry['content'], entry['id']);
    }
  }
  const merges = (model['merges'] as unknown[]).map((m): [string, string] => {
    const pair = typeof m === 'string' ? m.split(' ') : m;
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') {
      throw new Error(`${path}: bad merge ${JSON.stringify(m)}`);
    }
    return [pair[0], pair[1]];
  });
  const suffix = model['end_of_word_suffix'];
  return { vocab, merges, ...(typeof suffix === 'string' && suffix.length > 0 ? { endOfWordSuffix: suffix } : {}) };
}

type SpecialNames = Pick<ClipTokenizerInit, 'bosToken' | 'eosToken' | 'padToken'>;

function tokenName(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (isRecord(v) && typeof v['content'] === 'string') return v['content'];
  return undefined;
}

/** bos/eos/pad names from special_tokens_map.json, then tokenizer_config.json; absent files are fine. */
async function readSpecialTokens(dir: string): Promise<SpecialNames> {
  const names: SpecialNames = {};
  for (const file of ['special_tokens_map.json', 'tokenizer_config.json']) {
    const text = await readOptional(join(dir, file));
    if (text === undefined) continue;
    const data = parseJson(text, join(dir, file));
    if (!isRecord(data)) continue;
    names.bosToken ??= tokenName(data['bos_token']);
    names.eosToken ??= tokenName(data['eos_token']);
    names.padToken ??= tokenName(data['pad_token']);
  }
  for (const key of Object.keys(names) as (keyof SpecialNames)[]) if (names[key] === undefined) delete names[key];
  return names;
}
