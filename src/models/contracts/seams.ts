/**
 * Export-matrix rows for the seams between graphs: a ControlNet's scale input, the precisions a
 * separate ControlNet + UNet pair meet at, and VAE encoders that sample inside the graph.
 *
 * Rules (src/pipeline/seams.ts, src/pipeline/vae-encoder-check.ts): residuals are never scaled
 * or converted per step in JavaScript, and a VAE encoder must be deterministic, or refinement,
 * the face pass and outpainting do not reproduce for the same seed.
 *
 * A pair's verdict depends on both graphs, and `matches` sees one: the mixed-precision pair row
 * matches nothing (each of its graphs is fine alone; seams.ts refuses the two together), and
 * what a rewrite command writes looks from outside like another serving row, which matches too.
 *
 * Sources read: OnnxStack.Converter/ControlNet/models.py and config_controlnet.json (at 9325321:
 * conditioning_scale is among the traced inputs, a Python float, so a float64 scalar input, as the
 * demo ControlNet has), OnnxStack's ControlNetDiffuser.cs (it feeds the scale only when the
 * ControlNet has a fifth input, so 4-input ControlNets without one are still run there: the
 * no-scale row; which exports lack it is unverified here),
 * OnnxStack.Converter/StableDiffusion/models.py (vae_encoder: encode(sample)[0].sample()),
 * diffusers scripts/convert_stable_diffusion_checkpoint_to_onnx.py (vae_encoder forward =
 * encode(...)[0].sample(), output latent_sample), optimum/exporters/onnx/utils.py before and
 * after huggingface/optimum#2021 (1.23: latent_sample = latent_dist.sample() became
 * latent_parameters = latent_dist.parameters).
 */
import type { ExportContract, ExportFacts, GraphFacts } from './contract.ts';
import { RANDOM_OPS } from '../../onnx/random-ops.ts';

const graph = (f: ExportFacts): GraphFacts | undefined => (f.role === 'tokenizer' ? undefined : f);
const input = (f: GraphFacts, name: string) => f.inputs.find((i) => i.name === name);
const output = (f: GraphFacts, name: string) => f.outputs.find((o) => o.name === name);
const samples = (f: GraphFacts): boolean => RANDOM_OPS.some((op) => f.ops.has(op));

export const ROWS: ExportContract[] = [
  {
    id: 'onnxstack-controlnet-no-scale',
    exporter: 'OnnxStack/Amuse (4-input ControlNets, which its ControlNetDiffuser still runs)',
    graph: 'ControlNet without a conditioning_scale input (separate pair or extra ControlNet); a current OnnxStack export has one (float64 scalar) and serves',
    role: 'controlnet',
    verdict: 'refuses',
    how: 'qr-art models scale-controlnet --in F --out F gives it a conditioning_scale input that multiplies every residual inside the graph; or qr-art models fuse (scales inside the fused graph)',
    refusal: 'has no conditioning_scale input',
    matches: (f) => f.role === 'controlnet' && !input(graph(f)!, 'conditioning_scale'),
  },
  {
    id: 'qr-art-scaled-controlnet',
    exporter: 'qr-art',
    graph: 'the same ControlNet after `qr-art models scale-controlnet` (float32 scalar conditioning_scale)',
    role: 'controlnet',
    verdict: 'serves',
    how: 'runs as the separate pair (or an extra ControlNet); the scale multiplies the residuals inside the graph',
    // qr-art-controlnet-with-scale (qr-art.ts) matches it too: both serve.
    matches: (f) => f.role === 'controlnet' && input(graph(f)!, 'conditioning_scale')?.type === 'float32' && input(graph(f)!, 'conditioning_scale')?.dims.length === 0,
  },
  {
    id: 'onnxstack-fp32io-controlnet-fp16io-unet',
    exporter: 'OnnxStack/Amuse + optimum --fp16',
    graph: 'ControlNet with float32 IO (OnnxStack convertIO) beside a UNet with float16 IO, as a separate pair',
    role: 'controlnet',
    verdict: 'refuses',
    how: 'qr-art models fuse --controlnet F --unet F --out F: Cast nodes bridge the dtypes inside the one graph; name it graphs.denoiser',
    refusal: 'differ in precision at the seam',
    matches: () => false,
  },
  {
    id: 'qr-art-fused-mixed-precision',
    exporter: 'qr-art',
    graph: 'that pair fused by `qr-art models fuse` (timestep takes the fp16 UNet dtype)',
    role: 'denoiser',
    verdict: 'serves',
    how: 'one call per step; residuals cast to fp16 inside the graph',
    // qr-art-fused-denoiser (qr-art.ts) matches it too: both serve.
    matches: (f) => f.role === 'denoiser' && input(graph(f)!, 'guidance_scale') !== undefined && input(graph(f)!, 'timestep')?.type === 'float16',
  },
  {
    id: 'onnxstack-fp16-body-fp32-io-pair',
    exporter: 'OnnxStack/Amuse',
    graph: 'fp16 ControlNet and UNet both converted to float32 IO, as a separate pair',
    role: 'controlnet',
    verdict: 'serves',
    how: "the precisions agree at the seam: residuals go from one session into the other untouched. OnnxStack's Olive pass (OrtTransformersOptimization for a GPU) can add CUDA-only fusions: such a pair then starts on cuda only and is refused on cpu and webgpu naming them, as the ort-optimizer rows",
    // From outside, a float32-IO ControlNet with a scale input (as qr-art-controlnet-with-scale).
    matches: (f) => f.role === 'controlnet' && input(graph(f)!, 'conditioning_scale') !== undefined && input(graph(f)!, 'sample')?.type === 'float32' && graph(f)!.outputs.every((o) => o.type === 'float32'),
  },
  {
    id: 'sampling-vae-encoder',
    exporter: "diffusers' conversion script, OnnxStack, optimum < 1.23",
    graph: 'VAE encoder whose latent_sample is latent_dist.sample() (RandomNormalLike in the graph)',
    role: 'vae_encoder',
    verdict: 'refuses',
    how: 're-export with optimum 1.23+ (latent_parameters, mapped with outputs.latent_sample) or rewrite with qr-art models vae-mean --in F --out F (outputs the mean)',
    refusal: 'samples inside its graph',
    matches: (f) => f.role === 'vae_encoder' && samples(graph(f)!),
  },
  {
    id: 'optimum-latent-parameters-vae-encoder',
    exporter: 'optimum ≥ 1.23',
    graph: 'VAE encoder with latent_parameters (mean ‖ logvar, 8 channels)',
    role: 'vae_encoder',
    verdict: 'serves',
    how: 'map it with "outputs": { "latent_sample": "latent_parameters" }; the first 4 channels (the mean) are used',
    matches: (f) => f.role === 'vae_encoder' && !samples(graph(f)!) && output(graph(f)!, 'latent_parameters') !== undefined,
  },
  {
    id: 'deterministic-latent-sample-vae-encoder',
    exporter: 'custom exports (latent_dist.mean), the demo graphs',
    graph: 'VAE encoder whose latent_sample is the mean (no random op)',
    role: 'vae_encoder',
    verdict: 'serves',
    how: 'used as is',
    matches: (f) => f.role === 'vae_encoder' && !samples(graph(f)!) && output(graph(f)!, 'latent_sample') !== undefined,
  },
  {
    id: 'qr-art-vae-mean',
    exporter: 'qr-art',
    graph: 'that encoder after `qr-art models vae-mean` (the draw replaced by zeros: latent_sample is the mean)',
    role: 'vae_encoder',
    verdict: 'serves',
    how: 'deterministic; the same latents as latent_parameters\' mean',
    // From outside, an encoder whose latent_sample is the mean (as deterministic-latent-sample-vae-encoder).
    matches: (f) => f.role === 'vae_encoder' && !samples(graph(f)!) && output(graph(f)!, 'latent_sample') !== undefined,
  },
];
