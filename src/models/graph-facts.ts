/**
 * The facts an export contract is matched on (contracts/contract.ts), read from files without
 * running anything: a graph's inputs and outputs (names, dtypes, dims) and every op type it uses
 * (subgraphs and model-local functions included; attention with packed inputs named apart, since
 * only CUDA runs it: pipeline/packed-attention.ts), or the file names of a tokenizer folder.
 *
 * Graph files are decoded with src/onnx/model-file.ts, which leaves external weights where they
 * are, so reading the facts of a 3.4 GB UNet reads only its model.onnx.
 */
import { readdir } from 'node:fs/promises';
import { readModelFile } from '../onnx/model-file.ts';
import { nodesOf } from '../onnx/nodes.ts';
import { elementTypeOf, tensorTypeOf, type ModelProto, type NodeProto, type ValueInfoProto } from '../onnx/proto.ts';
import { packingOf } from '../pipeline/packed-attention.ts';
import type { GraphRole } from '../pipeline/manifest.ts';
import type { GraphFacts, IoFacts, TokenizerFacts } from './contracts/contract.ts';

/** ONNX data type numbers we do not feed, by ONNX Runtime's names (so a fact never reads 'undefined'). */
const OTHER_TYPES: Readonly<Record<number, string>> = { 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 10: 'float16', 12: 'uint32', 13: 'uint64', 16: 'bfloat16' };

function ioFacts(v: ValueInfoProto): IoFacts {
  const t = tensorTypeOf(v);
  if (!t) return { name: v.name, type: 'non-tensor', dims: [] };
  return { name: v.name, type: elementTypeOf(t.type) ?? OTHER_TYPES[t.type] ?? `onnx-type-${t.type}`, dims: t.dims };
}

/** A node's op as `op` or `domain:op`; a MultiHeadAttention with packed inputs also as `com.microsoft:MultiHeadAttention(packed QKV)` (or KV). */
function opsOf(n: NodeProto): string[] {
  const op = n.domain === '' || n.domain === 'ai.onnx' ? n.opType : `${n.domain}:${n.opType}`;
  const packed = packingOf(n);
  return packed ? [op, `${op}(${packed})`] : [op];
}

/** Facts of a decoded model (inputs that are initializers too are not inputs: ONNX IR < 4 lists them). */
export function modelFacts(model: ModelProto, role: GraphRole): GraphFacts {
  const g = model.graph!;
  const initializers = new Set(g.initializer.map((t) => t.name));
  const ops = new Set<string>();
  for (const n of nodesOf(model)) for (const op of opsOf(n)) ops.add(op);
  return {
    role,
    inputs: g.input.filter((v) => !initializers.has(v.name)).map(ioFacts),
    outputs: g.output.map(ioFacts),
    ops,
  };
}

/** Facts of a graph file (external weights are not read). */
export async function readGraphFacts(file: string, role: GraphRole): Promise<GraphFacts> {
  return modelFacts(await readModelFile(file), role);
}

/** Facts of a tokenizer folder: its file names, one level. */
export async function readTokenizerFacts(dir: string): Promise<TokenizerFacts> {
  const entries = await readdir(dir, { withFileTypes: true });
  return { role: 'tokenizer', files: entries.filter((e) => e.isFile()).map((e) => e.name).sort() };
}
