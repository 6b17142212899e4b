/**
 * ONNX Runtime's offline Stable Diffusion optimizer (docs/models.md §2.6):
 * `python -m onnxruntime.transformers.models.stable_diffusion.optimize_pipeline -i IN -o OUT --float16`
 * run on a fused denoiser or a ControlNet-ready UNet staged as a pipeline's `unet`.
 *
 * What it writes, verified against microsoft/onnxruntime
 * onnxruntime/python/tools/transformers/models/stable_diffusion/optimize_pipeline.py (`unet` and
 * `safety_checker` optimized as model type unet, `keep_io_types=False`: every float input and
 * output becomes float16), onnx_model_unet.py (UnetOnnxModel._optimize: LayerNormalization,
 * com.microsoft Gelu, GroupNorm (channels last), BiasSplitGelu, MultiHeadAttention with packed
 * QKV/KV, SkipLayerNormalization, SkipGroupNorm, NhwcConv, BiasAdd) and fusion_options.py (which
 * flag turns each off: --disable_group_norm, --disable_skip_group_norm, --disable_nhwc_conv,
 * --disable_bias_splitgelu, --disable_bias_add; the SD fusions are on by default for model type unet).
 *
 * Which of those operators have kernels on the CPU was measured here, not read: a one-node graph
 * of each, in float16 and float32, made into a CPU session of onnxruntime-node 1.30. GroupNorm,
 * SkipGroupNorm, NhwcConv, BiasSplitGelu and BiasAdd fail ("Could not find an implementation" /
 * "Failed to find kernel"); MultiHeadAttention, Attention, SkipLayerNormalization, Gelu,
 * BiasGelu and FastGelu load and run. So an optimized graph with the default flags is for the
 * CUDA provider only (served there: unverified here, no CUDA in this build), and the same graph
 * optimized with the five --disable flags is portable. WebGPU reaches the same CPU kernels for
 * what it cannot run (ONNX Runtime's fallback), so it is refused alike (measured on Mesa's software
 * Vulkan: GroupNorm, SkipGroupNorm and NhwcConv fail there too; BiasAdd runs on WebGPU).
 *
 * One more default is CUDA-only, and it does not show at load: with --float16 the attention
 * fusion packs MultiHeadAttention's inputs (packed QKV for self-attention, packed KV for cross-
 * attention; fusion_options.py: enable_packed_qkv, enable_packed_kv). The CPU and WebGPU kernels
 * refuse packed inputs on the first run (measured here; pipeline/packed-attention.ts), so the
 * worker refuses such a graph at start there, and the portable flags include
 * --disable_packed_qkv --disable_packed_kv.
 */
import { UNPACK_FLAGS } from '../../pipeline/packed-attention.ts';
import type { ExportContract, ExportFacts } from './contract.ts';
import { isGraph } from './match.ts';

/** The optimizer's fused operators that have no CPU kernel in onnxruntime-node 1.30 (the session cannot be made), each with the optimize_pipeline flag that leaves it out. */
export const CUDA_ONLY_FUSIONS: Readonly<Record<string, string>> = {
  'com.microsoft:GroupNorm': '--disable_group_norm',
  'com.microsoft:SkipGroupNorm': '--disable_skip_group_norm',
  'com.microsoft:NhwcConv': '--disable_nhwc_conv',
  'com.microsoft:BiasSplitGelu': '--disable_bias_splitgelu',
  'com.microsoft:BiasAdd': '--disable_bias_add',
};

/** Attention with packed inputs (graph-facts.ts names it apart): loads everywhere, runs on CUDA only. */
export const PACKED_ATTENTION: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(UNPACK_FLAGS).map(([packing, flag]) => [`com.microsoft:MultiHeadAttention(${packing})`, flag]),
);

/** Every CUDA-only fusion with its flag. */
export const CUDA_ONLY: Readonly<Record<string, string>> = { ...CUDA_ONLY_FUSIONS, ...PACKED_ATTENTION };

/** The flags that make a portable graph: every CUDA-only fusion off, attention unpacked (attention and LayerNorm fusions stay: they have CPU kernels). */
export const PORTABLE_FLAGS = Object.values(CUDA_ONLY).join(' ');

const present = (f: ExportFacts, ops: Readonly<Record<string, string>>): string[] =>
  isGraph(f) ? Object.keys(ops).filter((op) => f.ops.has(op)).map((op) => op.slice('com.microsoft:'.length)) : [];

/** The CUDA-only fused operators a graph's facts list (bare op names; packed attention as `MultiHeadAttention(packed QKV)`). */
export const cudaOnlyOps = (f: ExportFacts): string[] => present(f, CUDA_ONLY);

/** Those of them with no kernel at all elsewhere: a session cannot be made. */
const kernelLessOps = (f: ExportFacts): string[] => present(f, CUDA_ONLY_FUSIONS);

const hasContribOps = (f: ExportFacts): boolean => isGraph(f) && [...f.ops].some((op) => op.startsWith('com.microsoft:'));
const floatIoIsHalf = (f: ExportFacts): boolean => isGraph(f) && [...f.inputs, ...f.outputs].filter((v) => v.type.startsWith('float')).every((v) => v.type === 'float16');
const hasIo = (f: ExportFacts, inputs: readonly string[], output: string): boolean =>
  isGraph(f) && inputs.every((n) => f.inputs.some((i) => i.name === n)) && f.outputs.some((o) => o.name === output);

const DENOISER_IO = ['sample', 'timestep', 'encoder_hidden_states', 'controlnet_cond', 'conditioning_scale'];
const UNET_IO = ['sample', 'timestep', 'encoder_hidden_states', 'down_block_0_additional_residual', 'mid_block_additional_residual'];

const CUDA_HOW = `served on EXECUTION_PROVIDER=cuda (unverified here); on cpu or webgpu refused at start, naming the operators: run the worker on cuda, or optimize the fp32 graph again with ${PORTABLE_FLAGS} (docs/models.md §2.6)`;
const REFUSAL = 'have CUDA kernels only';

export const ROWS: ExportContract[] = [
  {
    id: 'ort-optimizer-fp16-denoiser-cuda',
    exporter: 'ONNX Runtime optimize_pipeline --float16',
    graph: 'denoiser/model.onnx optimized with the default fusions (GroupNorm, SkipGroupNorm, NhwcConv, BiasSplitGelu, BiasAdd, MultiHeadAttention)',
    role: 'denoiser',
    verdict: 'refuses',
    how: CUDA_HOW,
    refusal: REFUSAL,
    matches: (f) => hasIo(f, DENOISER_IO, 'noise_pred') && kernelLessOps(f).length > 0,
  },
  {
    id: 'ort-optimizer-fp16-unet-cuda',
    exporter: 'ONNX Runtime optimize_pipeline --float16',
    graph: 'unet/model.onnx (ControlNet-ready) optimized with the default fusions',
    role: 'unet',
    verdict: 'refuses',
    how: `${CUDA_HOW}; its ControlNet must be optimized alike (both --float16 or neither)`,
    refusal: REFUSAL,
    matches: (f) => hasIo(f, UNET_IO, 'out_sample') && kernelLessOps(f).length > 0,
  },
  {
    id: 'ort-optimizer-fp16-denoiser-packed-attention',
    exporter: `ONNX Runtime optimize_pipeline --float16 ${Object.values(CUDA_ONLY_FUSIONS).join(' ')}`,
    graph: 'denoiser/model.onnx whose MultiHeadAttention keeps the default packed QKV / KV inputs',
    role: 'denoiser',
    verdict: 'refuses',
    how: 'served on EXECUTION_PROVIDER=cuda (unverified here); on cpu or webgpu the session would load and its first step fail, so it is refused at start: run the worker on cuda, or optimize the fp32 graph again adding --disable_packed_qkv --disable_packed_kv (docs/models.md §2.6)',
    refusal: 'which ONNX Runtime runs on CUDA only',
    matches: (f) => hasIo(f, DENOISER_IO, 'noise_pred') && kernelLessOps(f).length === 0 && present(f, PACKED_ATTENTION).length > 0,
  },
  {
    id: 'ort-optimizer-fp16-denoiser-portable',
    exporter: `ONNX Runtime optimize_pipeline --float16 ${PORTABLE_FLAGS}`,
    graph: 'denoiser/model.onnx with only the fusions that have CPU kernels (MultiHeadAttention with unpacked inputs, SkipLayerNormalization, Gelu)',
    role: 'denoiser',
    verdict: 'serves',
    how: 'on every provider: float16 inputs and outputs (the timestep and both scales too, controlnet_cond stays uint8) read from the graph; the contrib operators left have CPU kernels',
    matches: (f) => hasIo(f, DENOISER_IO, 'noise_pred') && hasContribOps(f) && cudaOnlyOps(f).length === 0 && floatIoIsHalf(f),
  },
];
