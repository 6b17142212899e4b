/**
 * Packed attention: ONNX Runtime's SD optimizer (optimize_pipeline, docs/models.md §2.6) fuses
 * attention into com.microsoft MultiHeadAttention and, with --float16, packs its inputs by default:
 * self-attention's Q, K and V as one [B, L, N, 3, H] query (key and value left empty), and
 * cross-attention's K and V as one [B, L, N, 2, H] key (value left empty). Only the CUDA kernel
 * takes packed inputs. On the CPU and WebGPU providers of onnxruntime-node 1.30 the session loads
 * and the first step fails ("Packed QKV of shape (B, L, N, 3, H) not implemented for cpu",
 * "Packed KV not implemented for webgpu": measured here on one-node graphs), so such a graph is
 * refused at start there, naming the two optimizer flags that leave the inputs unpacked
 * (--disable_packed_qkv, --disable_packed_kv; the unpacked MultiHeadAttention runs everywhere).
 */
import { fileMentions } from '../onnx/file-mentions.ts';
import { readModelFile } from '../onnx/model-file.ts';
import { nodesOf } from '../onnx/nodes.ts';
import type { ModelProto, NodeProto } from '../onnx/proto.ts';
import { GraphSessionError } from './graph-session.ts';
import type { DeviceName } from './providers.ts';

export type PackedAttention = 'packed QKV' | 'packed KV';

/** The optimize_pipeline flag that leaves each packing out. */
export const UNPACK_FLAGS: Readonly<Record<PackedAttention, string>> = { 'packed QKV': '--disable_packed_qkv', 'packed KV': '--disable_packed_kv' };

/** How a node packs its attention inputs, or undefined (not a MultiHeadAttention, or unpacked). */
export function packingOf(n: NodeProto): PackedAttention | undefined {
  if (n.domain !== 'com.microsoft' || n.opType !== 'MultiHeadAttention') return undefined;
  const key = n.input[1] ?? '';
  const value = n.input[2] ?? '';
  if (key === '') return 'packed QKV';
  return value === '' ? 'packed KV' : undefined;
}

/** The packings a model's nodes use (graph, subgraphs, model-local functions), in a fixed order. */
export function packedAttentionOf(model: ModelProto): PackedAttention[] {
  const found = new Set<PackedAttention>();
  for (const n of nodesOf(model)) {
    const p = packingOf(n);
    if (p) found.add(p);
  }
  return (Object.keys(UNPACK_FLAGS) as PackedAttention[]).filter((p) => found.has(p));
}

/** Throws GraphSessionError naming the fix when the graph in `file` packs attention inputs and the provider cannot run that. */
export async function checkAttentionRunsOn(provider: DeviceName, file: string, shown: string, role: string): Promise<void> {
  if (provider === 'cuda') return;
  // Most graphs have no MultiHeadAttention at all: their bytes say so without decoding them.
  if (!(await fileMentions(file, ['MultiHeadAttention']))) return;
  const packed = packedAttentionOf(await readModelFile(file));
  if (packed.length === 0) return;
  throw new GraphSessionError(
    `${shown} (${role}): its MultiHeadAttention nodes take ${packed.join(' and ')} inputs, which ONNX Runtime runs on CUDA only ` +
      `(on ${provider} the session loads and the first step fails). It was optimized by ONNX Runtime's optimize_pipeline with its default packing: ` +
      `run this worker with EXECUTION_PROVIDER=cuda, or optimize the fp32 graph again adding ${packed.map((p) => UNPACK_FLAGS[p]).join(' ')} (docs/models.md §2.6)`,
  );
}
