/**
 * Fixtures of ONNX Runtime's SD optimizer output (src/models/contracts/ort-optimizer.ts): the demo
 * fused denoiser (and the demo ControlNet-ready UNet) with float16 inputs and outputs, as
 * `optimize_pipeline --float16` leaves them (keep_io_types=False), carrying com.microsoft fused
 * operators on the path to their output:
 *
 *   cuda       GroupNorm (channels last), SkipGroupNorm, NhwcConv, BiasAdd, BiasSplitGelu: the
 *              default fusions, which have no CPU kernel, so a CPU session of it cannot be made
 *   packed     MultiHeadAttention with packed QKV (one [B, L, N, 3, H] query, key and value
 *              empty): the fusions of the five --disable flags gone, the packing left on; the
 *              session loads on the CPU, its run would fail, so the worker refuses it at start
 *   portable   com.microsoft MultiHeadAttention with unpacked inputs and Gelu (what is left with
 *              all seven flags; both have CPU kernels)
 *
 * The operators sit on a side branch whose result is multiplied by zero and added to the
 * prediction, so the graph still predicts what the demo graph predicts and ONNX Runtime cannot
 * prune them away. The fixtures carry the optimizer's interface and operators, not its rewrite of
 * a real UNet's attention and normalisation.
 */
import { create } from '@bufbuild/protobuf';
import { OperatorSetIdProtoSchema } from 'onnx-buf';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/ort-optimizer.ts';
import { node, tensor, type ModelProto, type NodeProto } from '../../../src/onnx/proto.ts';
import type { ExportRow } from './row.ts';
import { demoGraph, separatePair, withHalfIo, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;
const MS = 'com.microsoft';

/** `output` = its old value + 0 · (a scalar reduced from the branch `branch` builds on the old value). */
function withContribBranch(model: ModelProto, output: string, branch: (from: string, at: string) => { nodes: NodeProto[]; out: string; consts: ReturnType<typeof tensor>[] }): ModelProto {
  const g = model.graph!;
  const pre = `${output}/before-fusions`;
  for (const n of g.node) n.output = n.output.map((x) => (x === output ? pre : x));
  const at = 'ort-optimizer';
  const b = branch(pre, at);
  g.initializer.push(...b.consts, tensor(`${at}/zero`, 'float32', [], [0]));
  g.node.push(
    ...b.nodes,
    node('ReduceSum', [b.out], [`${at}/sum`], { keepdims: 0 }, `${at}/sum`),
    node('Mul', [`${at}/sum`, `${at}/zero`], [`${at}/nothing`], {}, `${at}/times-zero`),
    node('Add', [pre, `${at}/nothing`], [output], {}, `${at}/add`),
  );
  if (!model.opsetImport.some((o) => o.domain === MS)) model.opsetImport.push(create(OperatorSetIdProtoSchema, { domain: MS, version: 1n }));
  return model;
}

/** The default fusions' CUDA-only operators, on the [B, 4, H, W] prediction. */
function cudaBranch(from: string, at: string) {
  const c = (name: string, dims: number[], value: number) => tensor(`${at}/${name}`, 'float32', dims, new Array(dims.reduce((a, b) => a * b, 1)).fill(value));
  return {
    consts: [c('gamma', [4], 1), c('beta', [4], 0), c('conv-w', [4, 3, 3, 4], 0.01), c('bias', [4], 0), tensor(`${at}/shape`, 'int64', [3], [0, -1, 4])],
    out: `${at}/gelu`,
    nodes: [
      node('Transpose', [from], [`${at}/nhwc`], { perm: [0, 2, 3, 1] }, `${at}/to-nhwc`),
      node('GroupNorm', [`${at}/nhwc`, `${at}/gamma`, `${at}/beta`], [`${at}/gn`], { activation: 1, epsilon: { float: 1e-5 }, groups: 1, channels_last: 1 }, `${at}/GroupNorm`, MS),
      node('SkipGroupNorm', [`${at}/gn`, `${at}/gamma`, `${at}/beta`, `${at}/nhwc`], [`${at}/sgn`], { activation: 0, epsilon: { float: 1e-5 }, groups: 1, channels_last: 1 }, `${at}/SkipGroupNorm`, MS),
      node('NhwcConv', [`${at}/sgn`, `${at}/conv-w`], [`${at}/conv`], { pads: [1, 1, 1, 1] }, `${at}/NhwcConv`, MS),
      node('Reshape', [`${at}/conv`, `${at}/shape`], [`${at}/seq`], {}, `${at}/to-sequence`),
      node('BiasAdd', [`${at}/seq`, `${at}/bias`, `${at}/seq`], [`${at}/biased`], {}, `${at}/BiasAdd`, MS),
      node('BiasSplitGelu', [`${at}/biased`, `${at}/bias`], [`${at}/gelu`], {}, `${at}/BiasSplitGelu`, MS),
    ],
  };
}

/** The prediction as a [B, L, 4] sequence, one head of 4, for attention. */
function sequence(from: string, at: string) {
  return {
    consts: [tensor(`${at}/seq-shape`, 'int64', [3], [0, -1, 4]), tensor(`${at}/qkv-shape`, 'int64', [5], [0, 0, 1, 1, 4])],
    nodes: [node('Reshape', [from, `${at}/seq-shape`], [`${at}/seq`], {}, `${at}/to-sequence`)],
  };
}

/** What the portable flags leave: MultiHeadAttention on separate Q, K, V and Gelu (CPU kernels in onnxruntime-node 1.30). */
function portableBranch(from: string, at: string) {
  const seq = sequence(from, at);
  return {
    consts: seq.consts,
    out: `${at}/gelu`,
    nodes: [
      ...seq.nodes,
      node('MultiHeadAttention', [`${at}/seq`, `${at}/seq`, `${at}/seq`], [`${at}/attn`], { num_heads: 1 }, `${at}/MultiHeadAttention`, MS),
      node('Gelu', [`${at}/attn`], [`${at}/gelu`], {}, `${at}/Gelu`, MS),
    ],
  };
}

/** The default packing left on: self-attention's Q, K, V packed into one [B, L, 1, 3, 4] query. */
function packedBranch(from: string, at: string) {
  const seq = sequence(from, at);
  return {
    consts: seq.consts,
    out: `${at}/attn`,
    nodes: [
      ...seq.nodes,
      node('Reshape', [`${at}/seq`, `${at}/qkv-shape`], [`${at}/one`], {}, `${at}/to-heads`),
      node('Concat', [`${at}/one`, `${at}/one`, `${at}/one`], [`${at}/qkv`], { axis: 3 }, `${at}/pack-qkv`),
      node('MultiHeadAttention', [`${at}/qkv`], [`${at}/attn`], { num_heads: 1 }, `${at}/MultiHeadAttention`, MS),
    ],
  };
}

/** The demo fused denoiser with fp16 IO and `branch`'s operators, as the model's denoiser. */
async function fp16Denoiser(dir: string, branch: Parameters<typeof withContribBranch>[2]): Promise<string> {
  const m = withHalfIo(withContribBranch(await demoGraph('denoiser/model.onnx'), 'noise_pred', branch));
  const file = await writeGraph(dir, 'denoiser/model.onnx', m);
  return writeFixtureManifest(dir, (g, model) => {
    g.denoiser = { path: file };
    model.dtype = 'fp16';
  });
}

export const ROWS: ExportRow[] = [
  {
    contract: contract('ort-optimizer-fp16-denoiser-cuda'),
    build: (dir) => fp16Denoiser(dir, cudaBranch),
  },
  {
    contract: contract('ort-optimizer-fp16-unet-cuda'),
    async build(dir) {
      const m = withHalfIo(withContribBranch(await demoGraph('unet/model.onnx'), 'out_sample', cudaBranch));
      const file = await writeGraph(dir, 'unet/model.onnx', m);
      return writeFixtureManifest(dir, (g) => separatePair(g, { unet: { path: file } }));
    },
  },
  {
    contract: contract('ort-optimizer-fp16-denoiser-packed-attention'),
    build: (dir) => fp16Denoiser(dir, packedBranch),
  },
  {
    contract: contract('ort-optimizer-fp16-denoiser-portable'),
    exercises: ['txt2img', 'refine'],
    build: (dir) => fp16Denoiser(dir, portableBranch),
  },
];
