/**
 * Writes the demo Stable Diffusion 1.5 graphs: tiny hand-built ONNX models with the input/output
 * contracts of real exports (design notes §4, "Model contracts"), so the pipeline runs and is
 * tested on CPU with no downloaded weights. They produce smooth, prompt-coloured images that
 * follow the control image; they are not neural networks. Each builder's file states its
 * graph's contract input by input (B = batch, h×w = latent size, H×W = 8h×8w image size; all
 * dims symbolic, named batch, height, width, height/2..., image_height, image_width, sequence):
 * text-encoder.ts; unet.ts (ControlNet, UNet, inpainting UNet, the fused denoiser); vae.ts;
 * safety-checker.ts; captioner.ts; face-detector.ts. latent-space.ts holds the colour space
 * they share.
 * Usage: npx tsx scripts/demo-models/build.ts models/demo
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CAPTION_IDS, buildCaptionDecoder, buildCaptionEncoder, captionTokenizerJson } from './captioner.ts';
import { buildFaceDetector } from './face-detector.ts';
import { buildSafetyChecker, CLIP_MEAN, CLIP_STD } from './safety-checker.ts';
import { buildTextEncoder } from './text-encoder.ts';
import { buildControlNet, buildDenoiser, buildUnet, buildUnetInpaint } from './unet.ts';
import { buildVaeDecoder, buildVaeEncoder } from './vae.ts';

/** Every demo graph, by path under the output folder. */
export const DEMO_GRAPHS: readonly { path: string; build: () => Uint8Array }[] = [
  { path: 'text_encoder/model.onnx', build: buildTextEncoder },
  { path: 'controlnet/model.onnx', build: buildControlNet },
  { path: 'unet/model.onnx', build: buildUnet },
  { path: 'denoiser/model.onnx', build: buildDenoiser },
  { path: 'unet_inpaint/model.onnx', build: buildUnetInpaint },
  { path: 'vae_decoder/model.onnx', build: buildVaeDecoder },
  { path: 'vae_encoder/model.onnx', build: buildVaeEncoder },
  { path: 'safety_checker/model.onnx', build: buildSafetyChecker },
  { path: 'captioner/encoder_model.onnx', build: buildCaptionEncoder },
  { path: 'captioner/decoder_model.onnx', build: buildCaptionDecoder },
  { path: 'face_detector/model.onnx', build: buildFaceDetector },
];

/** Small JSON side files that real exports also carry. */
export const DEMO_FILES: readonly { path: string; text: () => string }[] = [
  { path: 'captioner/tokenizer.json', text: captionTokenizerJson },
  {
    path: 'captioner/generation_config.json',
    text: () =>
      `${JSON.stringify({ decoder_start_token_id: CAPTION_IDS.bos, bos_token_id: CAPTION_IDS.bos, eos_token_id: CAPTION_IDS.eos, pad_token_id: CAPTION_IDS.pad, max_length: 12 }, null, 2)}\n`,
  },
  {
    path: 'captioner/preprocessor_config.json',
    text: () =>
      `${JSON.stringify({ do_resize: true, size: { height: 224, width: 224 }, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }, null, 2)}\n`,
  },
  {
    path: 'safety_checker/preprocessor_config.json',
    text: () =>
      `${JSON.stringify({ do_resize: true, size: { shortest_edge: 224 }, do_center_crop: true, crop_size: { height: 224, width: 224 }, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: CLIP_MEAN, image_std: CLIP_STD }, null, 2)}\n`,
  },
];

export async function buildDemoModels(outDir: string): Promise<{ path: string; bytes: number }[]> {
  const written: { path: string; bytes: number }[] = [];
  const write = async (path: string, data: Uint8Array | string): Promise<void> => {
    const file = join(outDir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, data);
    written.push({ path, bytes: typeof data === 'string' ? Buffer.byteLength(data) : data.length });
  };
  for (const graph of DEMO_GRAPHS) await write(graph.path, graph.build());
  for (const file of DEMO_FILES) await write(file.path, file.text());
  return written;
}

async function main(): Promise<void> {
  const [target] = process.argv.slice(2);
  if (!target) {
    console.error('usage: npx tsx scripts/demo-models/build.ts <output folder>');
    process.exit(2);
  }
  const outDir = resolve(target);
  for (const { path, bytes } of await buildDemoModels(outDir)) {
    console.log(`${String(bytes).padStart(9)}  ${join(outDir, path)}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
