/**
 * Tokenizer folders that hold a tokenizer graph instead of vocab.json + merges.txt or
 * tokenizer.json: OnnxStack/Amuse ship CLIP's tokenizer as `cliptokenizer.onnx`, one node of
 * onnxruntime-extensions' CLIPTokenizer custom op (domain ai.onnx.contrib). onnxruntime-node has
 * no such op, so the graph cannot be run here; but the node carries the whole tokenizer in its
 * attributes, so we read them and build our own ClipTokenizer (tokenizer.ts) from them.
 *
 * The node's layout, verified against microsoft/onnxruntime-extensions (commit 319f8d2c):
 * operators/tokenizer/bpe_kernels.cc KernelBpeTokenizer::OnModelAttach reads the string
 * attributes `vocab` (required, non-empty) and `merges` (required, non-empty) and the int
 * `padding_length` (-1: no padding); onnxruntime_extensions/_hf_cvt.py convert_bpe_vocab writes
 * `vocab` as the JSON of the Hugging Face tokenizer's encoder (vocab.json's format), `merges` as
 * "a b" lines in rank order (merges.txt without its #version line) and, when the tokenizer has
 * added tokens, `added_token` as "token=id" lines; _cuops.py CLIPTokenizer: one string input,
 * outputs input_ids, attention_mask, offset_mapping. OnnxStack.Core/README.md (TensorStack-AI/OnnxStack
 * at 9325321) names the file cliptokenizer.onnx and feeds it a string tensor. Which file name
 * Amuse's downloaded model folders use is unverified, so every *.onnx file of the folder is tried.
 * padding_length is not used: the text encoder's 77-token window decides (tokenizer.ts).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeModel, type AttributeProto, type ModelProto, type NodeProto } from '../onnx/proto.ts';

export const CLIP_TOKENIZER_OP = 'CLIPTokenizer';
/** onnxruntime-extensions' custom-op domain. */
export const EXTENSIONS_DOMAIN = 'ai.onnx.contrib';
/** A tokenizer graph is a few MB; anything far larger is a model graph put in the wrong folder. */
const MAX_TOKENIZER_GRAPH_BYTES = 64 * 1024 * 1024;
/** Tried first, in this order; then any other *.onnx file of the folder. */
const KNOWN_NAMES = ['cliptokenizer.onnx', 'tokenizer.onnx', 'model.onnx'];

/** What a CLIPTokenizer node carries, as text in the formats of vocab.json and merges.txt. */
export interface TokenizerGraph {
  readonly path: string;
  /** vocab.json's format: {"token": id, ...}. */
  readonly vocab: string;
  /** merges.txt's format: "a b" lines in rank order. */
  readonly merges: string;
  /** From `added_token` ("token=id" lines), when present. */
  readonly addedTokens: readonly (readonly [string, number])[];
  /** -1 or absent: no padding. */
  readonly paddingLength?: number;
}

/** The CLIPTokenizer node of a model's main graph, or undefined. */
export function clipTokenizerNode(model: ModelProto): NodeProto | undefined {
  return model.graph?.node.find((n) => n.opType === CLIP_TOKENIZER_OP && (n.domain === EXTENSIONS_DOMAIN || n.domain === ''));
}

const text = (a: AttributeProto): string => new TextDecoder().decode(a.s);

/** The tokenizer a CLIPTokenizer node carries (`path` for messages). */
export function tokenizerOfNode(n: NodeProto, path: string): TokenizerGraph {
  const attr = (name: string) => n.attribute.find((a) => a.name === name);
  const required = (name: string): string => {
    const a = attr(name);
    const value = a ? text(a) : '';
    if (value.trim() === '') throw new Error(`${path}: its ${CLIP_TOKENIZER_OP} node has no '${name}' attribute (onnxruntime-extensions requires vocab and merges)`);
    return value;
  };
  const addedTokens: [string, number][] = [];
  const added = attr('added_token');
  for (const line of added ? text(added).split('\n') : []) {
    const at = line.lastIndexOf('=');
    const id = Number(line.slice(at + 1));
    if (at > 0 && Number.isInteger(id)) addedTokens.push([line.slice(0, at), id]);
  }
  const padding = attr('padding_length');
  return { path, vocab: required('vocab'), merges: required('merges'), addedTokens, ...(padding ? { paddingLength: Number(padding.i) } : {}) };
}

async function onnxFiles(dir: string): Promise<string[]> {
  const names = (await listFolder(dir)).filter((n) => n.toLowerCase().endsWith('.onnx'));
  const rank = (n: string) => {
    const i = KNOWN_NAMES.indexOf(n.toLowerCase());
    return i < 0 ? KNOWN_NAMES.length : i;
  };
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

async function listFolder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * The first *.onnx file of `dir` that holds a CLIPTokenizer node, read; undefined when none does.
 * A graph too large to be a tokenizer, or one that does not parse, is passed over.
 */
export async function readTokenizerGraph(dir: string): Promise<TokenizerGraph | undefined> {
  for (const name of await onnxFiles(dir)) {
    const path = join(dir, name);
    if ((await stat(path)).size > MAX_TOKENIZER_GRAPH_BYTES) continue;
    let model: ModelProto;
    try {
      model = decodeModel(await readFile(path));
    } catch {
      continue;
    }
    const n = clipTokenizerNode(model);
    if (n) return tokenizerOfNode(n, path);
  }
  return undefined;
}

/** The start-up message for a folder with no tokenizer we can read: what was looked for, and what is there. */
export async function noTokenizerMessage(dir: string): Promise<string> {
  const files = await listFolder(dir);
  const onnx = files.filter((n) => n.toLowerCase().endsWith('.onnx'));
  const found =
    files.length === 0
      ? 'the folder is empty or missing'
      : `it holds ${files.join(', ')}${onnx.length > 0 ? ` (no ${CLIP_TOKENIZER_OP} node of onnxruntime-extensions in ${onnx.join(', ')})` : ''}`;
  return (
    `no CLIP tokenizer in ${dir}: looked for vocab.json + merges.txt (CLIP/diffusers), tokenizer.json (Hugging Face/optimum) ` +
    `or a tokenizer graph (*.onnx with a ${CLIP_TOKENIZER_OP} node, as OnnxStack/Amuse's cliptokenizer.onnx); ${found}`
  );
}
