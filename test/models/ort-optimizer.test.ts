/**
 * ONNX Runtime's SD optimizer output (src/models/contracts/ort-optimizer.ts): the claim the rows
 * rest on (which fused operators have no CPU kernel in the onnxruntime-node we ship), re-measured
 * so an upgrade that adds kernels fails here; the CUDA-fusion fixtures refused on the CPU naming
 * the operators and both fixes, not ONNX Runtime's bare message; packed attention (loads on the
 * CPU, fails on its first run: re-measured too) refused at start; the portable fixture served; and
 * `models check`'s table showing the refusing row first for a graph that also matches a serving one.
 */
import { create } from '@bufbuild/protobuf';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GraphProtoSchema, OperatorSetIdProtoSchema } from 'onnx-buf';
import ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/ort-optimizer.ts';
import { checkManifest, formatCheck } from '../../src/cli/models-check.ts';
import { CUDA_ONLY_FUSIONS } from '../../src/models/contracts/ort-optimizer.ts';
import { encodeModel, newModel, node, valueInfo, type Attr, type ElementType } from '../../src/onnx/proto.ts';

/** A one-node com.microsoft graph: inputs as [name, 'T' (the tested float type) or 'F' (float32), dims]. */
function oneNode(op: string, type: 'float16' | 'float32', ins: [string, 'T' | 'F', number[]][], attrs: Record<string, Attr> = {}): Uint8Array {
  const t = (x: 'T' | 'F'): ElementType => (x === 'T' ? type : 'float32');
  const graph = create(GraphProtoSchema, {
    name: op,
    node: [node(op, ins.map((i) => i[0]), ['y'], attrs, op, 'com.microsoft')],
    input: ins.map(([n, x, d]) => valueInfo(n, t(x), d)),
    output: [valueInfo('y', type, undefined)],
  });
  const opsets = [create(OperatorSetIdProtoSchema, { domain: '', version: 17n }), create(OperatorSetIdProtoSchema, { domain: 'com.microsoft', version: 1n })];
  return encodeModel(newModel({ irVersion: 8n, producerName: 'qr-art-test', graph, opsetImport: opsets }));
}

const GN = { epsilon: { float: 1e-5 }, groups: 4, channels_last: 1, activation: 1 } as const;
const CASES: Record<string, [[string, 'T' | 'F', number[]][], Record<string, Attr>?]> = {
  GroupNorm: [[['x', 'T', [1, 4, 4, 8]], ['g', 'F', [8]], ['b', 'F', [8]]], GN],
  SkipGroupNorm: [[['x', 'T', [1, 4, 4, 8]], ['g', 'F', [8]], ['b', 'F', [8]], ['s', 'T', [1, 4, 4, 8]]], GN],
  NhwcConv: [[['x', 'T', [1, 4, 4, 8]], ['w', 'T', [8, 3, 3, 8]]], { pads: [1, 1, 1, 1] }],
  BiasSplitGelu: [[['x', 'T', [1, 16, 64]], ['b', 'T', [64]]]],
  BiasAdd: [[['x', 'T', [1, 16, 32]], ['b', 'T', [32]], ['s', 'T', [1, 16, 32]]]],
  MultiHeadAttention: [[['q', 'T', [1, 16, 32]], ['k', 'T', [1, 16, 32]], ['v', 'T', [1, 16, 32]]], { num_heads: 2 }],
  SkipLayerNormalization: [[['x', 'T', [1, 16, 32]], ['s', 'T', [1, 16, 32]], ['g', 'T', [32]], ['b', 'T', [32]]]],
  Gelu: [[['x', 'T', [1, 16, 32]]]],
};

const opens = async (bytes: Uint8Array): Promise<boolean> => {
  try {
    await (await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'], logSeverityLevel: 3 })).release();
    return true;
  } catch {
    return false;
  }
};

let root: string | undefined;
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});
async function check(id: string) {
  root ??= await mkdtemp(join(tmpdir(), 'qrart-ort-opt-'));
  const dir = join(root, id);
  await mkdir(dir, { recursive: true });
  return checkManifest(await ROWS.find((r) => r.contract.id === id)!.build(dir), { provider: 'cpu' }, 1);
}

describe("ONNX Runtime's SD optimizer output", () => {
  it('has CPU kernels for the attention, LayerNorm and Gelu fusions only, not for the five the contracts call CUDA-only', async () => {
    const cpu: Record<string, boolean> = {};
    for (const [op, [ins, attrs]] of Object.entries(CASES)) {
      for (const type of ['float16', 'float32'] as const) cpu[`${op} ${type}`] = await opens(oneNode(op, type, ins, attrs));
    }
    const cudaOnly = Object.keys(CUDA_ONLY_FUSIONS).map((k) => k.slice('com.microsoft:'.length));
    for (const [key, ok] of Object.entries(cpu)) expect(ok, key).toBe(!cudaOnly.includes(key.split(' ')[0]!));
  });

  it.each(['ort-optimizer-fp16-denoiser-cuda', 'ort-optimizer-fp16-unet-cuda'])('%s: refused on the CPU naming the operators, the row, cuda and the flags', async (id) => {
    const result = await check(id);
    expect(result.error).toContain('have CUDA kernels only, none on cpu');
    expect(result.error).toContain(`export matrix: ${id}`);
    expect(result.error).toContain('GroupNorm, SkipGroupNorm, NhwcConv, BiasSplitGelu, BiasAdd');
    expect(result.error).toContain('EXECUTION_PROVIDER=cuda');
    expect(result.error).toContain('--disable_group_norm --disable_skip_group_norm --disable_nhwc_conv --disable_bias_splitgelu --disable_bias_add');
    // The table names the refusing row first although the graph's names are also a serving row's.
    const role = id.includes('unet') ? 'unet' : 'denoiser';
    expect(formatCheck(result)).toMatch(new RegExp(`^demo-sd15\\s+${role}\\s+\\S+\\s+${id} = \\S+.*refuses`, 'm'));
  }, 30_000);

  it('runs MultiHeadAttention on the CPU with separate Q, K, V only: packed QKV and packed KV load, then fail on the first run', async () => {
    const mha = (ins: [string, 'T' | 'F', number[]][]) => oneNode('MultiHeadAttention', 'float32', ins, { num_heads: 2 });
    const run = async (bytes: Uint8Array, feeds: Record<string, number[]>): Promise<string> => {
      const s = await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'], logSeverityLevel: 4 });
      try {
        const tensors = Object.fromEntries(Object.entries(feeds).map(([n, d]) => [n, new ort.Tensor('float32', new Float32Array(d.reduce((a, b) => a * b, 1)).fill(0.1), d)]));
        await s.run(tensors);
        return 'ran';
      } catch (err) {
        return (err as Error).message;
      } finally {
        await s.release();
      }
    };
    const d = [1, 4, 16];
    expect(await run(mha([['q', 'T', d], ['k', 'T', d], ['v', 'T', d]]), { q: d, k: d, v: d })).toBe('ran');
    expect(await run(mha([['q', 'T', [1, 4, 2, 3, 8]]]), { q: [1, 4, 2, 3, 8] })).toContain('Packed QKV of shape (B, L, N, 3, H) not implemented for CPU');
    expect(await run(mha([['q', 'T', d], ['kv', 'T', [1, 4, 2, 2, 8]]]), { q: d, kv: [1, 4, 2, 2, 8] })).toContain('Packed KV not implemented for CPU');
  });

  it('ort-optimizer-fp16-denoiser-packed-attention: refused at start on the CPU, before its first step would fail, naming the unpacking flag', async () => {
    const result = await check('ort-optimizer-fp16-denoiser-packed-attention');
    expect(result.error).toContain('its MultiHeadAttention nodes take packed QKV inputs, which ONNX Runtime runs on CUDA only');
    expect(result.error).toContain('EXECUTION_PROVIDER=cuda');
    expect(result.error).toContain('--disable_packed_qkv');
    expect(formatCheck(result)).toMatch(/^demo-sd15\s+denoiser\s+\S+\s+ort-optimizer-fp16-denoiser-packed-attention( = \S+)?\s.*refuses/m);
  }, 30_000);

  it('ort-optimizer-fp16-denoiser-portable: served, its denoiser stepped, named first in the table', async () => {
    const result = await check('ort-optimizer-fp16-denoiser-portable');
    expect(result.error).toBeUndefined();
    const row = result.rows.find((r) => r.role === 'denoiser')!;
    expect(row.contracts.map((c) => c.id)).toContain('ort-optimizer-fp16-denoiser-portable');
    expect(row.ms).toBeDefined();
    expect(formatCheck(result)).toMatch(/^demo-sd15\s+denoiser\s+\S+\s+ort-optimizer-fp16-denoiser-portable( = \S+)?\s.*serves/m);
  }, 30_000);
});
