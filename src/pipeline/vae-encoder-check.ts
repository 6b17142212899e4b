/**
 * Refuses, at start, a VAE encoder that samples inside its graph.
 *
 * Refinement, the face pass, the code regeneration and outpainting encode an image and then
 * denoise it from the job's seeded noise; an encoder that draws its own random numbers
 * (`latent_dist.sample()` traced into the graph: RandomNormalLike/RandomNormal) gives other
 * latents on every call, so the same seed no longer gives the same image. Exporters that write
 * one, checked against their sources:
 *
 *   diffusers  scripts/convert_stable_diffusion_checkpoint_to_onnx.py: forward =
 *              encode(sample)[0].sample(), output `latent_sample`
 *   OnnxStack  OnnxStack.Converter/StableDiffusion/models.py (vae_encoder_load): encode(sample)[0].sample()
 *   optimum    before 1.23 (optimum/exporters/onnx/utils.py, changed by huggingface/optimum#2021):
 *              {"latent_sample": encode(x=sample)["latent_dist"].sample()}; 1.23 and later write
 *              {"latent_parameters": ...latent_dist.parameters} (mean ‖ logvar, deterministic)
 *
 * The check is a scan of the graph for random ops (graph, subgraphs, model-local functions).
 * Decoding a model reads its inline weights, so the file's bytes are first searched for the op
 * names (streamed in chunks, nothing kept): a clean encoder is never decoded. Only on a hit is
 * the proto decoded to confirm the op is really a node (not bytes of a weight).
 *
 * We refuse rather than seed the draw: the pipeline uses the distribution's mean (the first 4
 * channels of latent_parameters, as diffusers' img2img with `argmax` would), and a seeded draw
 * would still give latents that differ from every other export of the same weights.
 * `qr-art models vae-mean` (src/onnx/vae-mean.ts) rewrites such a graph to output that mean.
 */
import { fileMentions } from '../onnx/file-mentions.ts';
import { RANDOM_OPS, randomOpsOf } from '../onnx/random-ops.ts';
import { readModelFile } from '../onnx/model-file.ts';
import { GraphSessionError } from './graph-session.ts';

/** The random ops of the model in `file` (empty for a deterministic graph). */
export async function randomOpsInFile(file: string): Promise<string[]> {
  if (!(await fileMentions(file, RANDOM_OPS))) return [];
  return randomOpsOf(await readModelFile(file));
}

/** Throws GraphSessionError naming the fix when the VAE encoder in `file` samples inside its graph. */
export async function checkVaeEncoderDeterministic(file: string, shown: string): Promise<void> {
  const ops = await randomOpsInFile(file);
  if (ops.length === 0) return;
  throw new GraphSessionError(
    `${shown}: the VAE encoder samples inside its graph (${ops.join(', ')}: latent_dist.sample() was traced in, as diffusers' conversion script, OnnxStack's converter and optimum before 1.23 export it), ` +
      `so refinement, the face pass and outpainting would not reproduce for the same seed. ` +
      `Re-export it with optimum 1.23 or later (\`optimum-cli export onnx --model <repo> <dir>\`: vae_encoder outputs latent_parameters, mean ‖ logvar) and map it with "outputs": { "latent_sample": "latent_parameters" }, ` +
      `or rewrite this one to output the mean: \`qr-art models vae-mean --in ${shown} --out <dir>/model.onnx\``,
  );
}
