/**
 * NSFW check with Stable Diffusion's safety_checker graph (diffusers' StableDiffusionSafetyChecker
 * as optimum / diffusers export it): clip_input [B,3,224,224] (CLIP_PREPROCESS, as its
 * preprocessor_config says) and images NHWC in [0,1] → has_nsfw_concepts [B].
 *
 * The graph also returns `images` (blacked out where flagged); we read the flags alone, so
 * `images` gets the small 224×224 crop instead of a full-size copy (an UltraHD image would be
 * a 100 MB float tensor for nothing).
 */
import type { RawImage } from '../image/raw.ts';
import type { GraphSession } from './graph-session.ts';
import { checkerBatch, CLIP_PREPROCESS } from './nsfw-preprocess.ts';
import { floatTensor, packRgbInterleaved } from './tensors.ts';

/** One boolean per image: true when the safety checker flags it. */
export async function safetyCheckerFlags(images: readonly RawImage[], checker: GraphSession): Promise<boolean[]> {
  if (images.length === 0) return [];
  const { pixels, dims, resized } = await checkerBatch(images, CLIP_PREPROCESS);
  const [n, , h, w] = dims;
  const feeds = { clip_input: floatTensor(checker.floatType('clip_input'), pixels, dims) };
  if (checker.hasInput('images')) {
    const nhwc = new Float32Array(n * h * w * 3);
    resized.forEach((image, i) => packRgbInterleaved(image, nhwc, i * h * w * 3));
    Object.assign(feeds, { images: floatTensor(checker.floatType('images'), nhwc, [n, h, w, 3]) });
  }
  const out = await checker.run(feeds, ['has_nsfw_concepts']);
  const flags = out.has_nsfw_concepts!;
  if (flags.data.length !== n) throw new Error(`${checker.path}: has_nsfw_concepts has ${flags.data.length} values for ${n} images`);
  return Array.from(flags.data as ArrayLike<unknown>, (v) => Boolean(v));
}
