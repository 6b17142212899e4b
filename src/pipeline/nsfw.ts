/**
 * NSFW check with Stable Diffusion's safety_checker graph: clip_input [B,3,224,224] (shortest
 * edge to 224, centre crop, CLIP mean/std, as its preprocessor_config says) and images NHWC in
 * [0,1] → has_nsfw_concepts [B].
 *
 * The graph only returns `images` (blacked out where flagged); we read the flags alone, so
 * `images` gets the small 224×224 crop instead of a full-size copy (an UltraHD image would be
 * a 100 MB float tensor for nothing).
 */
import sharp from 'sharp';
import { rawImage, type RawImage } from '../image/raw.ts';
import type { GraphSession } from './graph-session.ts';
import { floatTensor, packRgbInterleaved } from './tensors.ts';

export const CLIP_SIZE = 224;
export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;

/** Shortest edge to 224 (bicubic), centre crop 224×224, RGB. */
export async function clipCrop(image: RawImage): Promise<RawImage> {
  const { data, info } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } })
    .removeAlpha()
    .toColourspace('srgb')
    .resize(CLIP_SIZE, CLIP_SIZE, { fit: 'cover', position: 'centre', kernel: 'cubic' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return rawImage(new Uint8Array(data.buffer, data.byteOffset, data.length), info.width, info.height, info.channels as 3);
}

/** One boolean per image: true when the safety checker flags it. */
export async function detectNsfw(images: readonly RawImage[], checker: GraphSession): Promise<boolean[]> {
  if (images.length === 0) return [];
  const crops = await Promise.all(images.map(clipCrop));
  const n = crops.length;
  const plane = CLIP_SIZE * CLIP_SIZE;
  const clip = new Float32Array(n * 3 * plane);
  const nhwc = new Float32Array(n * plane * 3);
  // (v/255 - mean)/std per channel, as one table lookup per value.
  const tables = [0, 1, 2].map((c) => Float32Array.from({ length: 256 }, (_, v) => (v / 255 - CLIP_MEAN[c]!) / CLIP_STD[c]!));
  const [r, g, b] = tables as [Float32Array, Float32Array, Float32Array];
  crops.forEach((crop, i) => {
    const d = crop.data;
    const base = i * 3 * plane;
    for (let p = 0, s = 0; p < plane; p++, s += 3) {
      clip[base + p] = r[d[s]!]!;
      clip[base + plane + p] = g[d[s + 1]!]!;
      clip[base + 2 * plane + p] = b[d[s + 2]!]!;
    }
    packRgbInterleaved(crop, nhwc, i * plane * 3);
  });
  const feeds = { clip_input: floatTensor(checker.floatType('clip_input'), clip, [n, 3, CLIP_SIZE, CLIP_SIZE]) };
  if (checker.hasInput('images')) Object.assign(feeds, { images: floatTensor(checker.floatType('images'), nhwc, [n, CLIP_SIZE, CLIP_SIZE, 3]) });
  const out = await checker.run(feeds, ['has_nsfw_concepts']);
  const flags = out.has_nsfw_concepts!;
  if (flags.data.length !== n) throw new Error(`${checker.path}: has_nsfw_concepts has ${flags.data.length} values for ${n} images`);
  return Array.from(flags.data as ArrayLike<unknown>, (v) => Boolean(v));
}
