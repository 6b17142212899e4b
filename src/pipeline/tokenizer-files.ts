/**
 * The files a CLIP tokenizer comes as, read into what ClipTokenizer is built from: vocab.json +
 * merges.txt, Hugging Face's tokenizer.json, or an OnnxStack/Amuse tokenizer graph
 * (tokenizer-graph.ts), with the special-token names beside them.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { noTokenizerMessage, readTokenizerGraph } from './tokenizer-graph.ts';

/** OpenAI and Hugging Face read only this many merges from merges.txt (49152 - 256 - 2). */
export const MERGES_TXT_LIMIT = 48_894;

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

/**
 * Reads a tokenizer folder: vocab.json + merges.txt (preferred, what CLIPTokenizer reads),
 * tokenizer.json (Hugging Face tokenizers) or a tokenizer graph (OnnxStack/Amuse). Special token
 * names come from special_tokens_map.json / tokenizer_config.json when present.
 */
export async function readTokenizerFolder(dir: string): Promise<ClipTokenizerInit> {
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
  return { ...init, ...specials };
}

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
