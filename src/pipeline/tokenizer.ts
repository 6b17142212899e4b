/**
 * CLIP's byte-level BPE tokenizer, as Stable Diffusion 1.5 uses it (openai/clip-vit-large-patch14):
 * prompt text → exactly 77 int32 ids = bos, content (at most 75), eos, then padding.
 *
 * Reference behaviour is OpenAI's simple_tokenizer (the one the weights were trained with) and
 * Hugging Face's CLIPTokenizer. The steps below the vocabulary (normalize, split, byte-level
 * characters, merges) are in clip-bpe.ts; reading the files, in tokenizer-files.ts.
 */
import { bpe, DEFAULT_BOS_TOKEN, DEFAULT_EOS_TOKEN, END_OF_WORD, fromByteLevel, mergeRanks, normalizeText, preTokenize, preTokenizer, toByteLevel, type MergeRanks } from './clip-bpe.ts';
import { readTokenizerFolder, type ClipTokenizerInit } from './tokenizer-files.ts';

export const CLIP_MAX_LENGTH = 77;
/** The real CLIP ids, used only when a vocabulary lacks the special tokens. */
export const DEFAULT_BOS_ID = 49406;
export const DEFAULT_EOS_ID = 49407;

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

  /** The tokenizer a folder holds (readTokenizerFolder says which files it reads). */
  static async load(dir: string, options: { maxLength?: number } = {}): Promise<ClipTokenizer> {
    const init = await readTokenizerFolder(dir);
    return new ClipTokenizer({ ...init, ...(options.maxLength !== undefined ? { maxLength: options.maxLength } : {}) });
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
      bytes.push(...fromByteLevel(body));
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
