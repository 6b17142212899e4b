/**
 * The image every NSFW checker graph reads: resized (cover: shortest edge then centre crop, as
 * CLIPImageProcessor does; stretch: both sides, as ViTImageProcessor does), rescaled and
 * normalised per channel into NCHW floats. One implementation for all checkers; what differs is
 * the ImagePreprocess, read from the graph's preprocessor_config.json (Hugging Face image
 * processor) or from the manifest's `nsfw.preprocess`.
 */
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { cropImage } from '../image/canvas.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import type { NsfwPreprocess } from './nsfw-manifest.ts';

type Kernel = 'nearest' | 'linear' | 'cubic' | 'lanczos3';
type Rgb = readonly [number, number, number];

export interface ImagePreprocess {
  readonly resize: { readonly kind: 'stretch'; readonly width: number; readonly height: number } | { readonly kind: 'cover'; readonly shortestEdge: number; readonly width: number; readonly height: number };
  readonly kernel: Kernel;
  /** Multiplies the 0..255 values before normalising (1/255). */
  readonly rescale: number;
  readonly mean: Rgb;
  readonly std: Rgb;
}

export const CLIP_SIZE = 224;
export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;

/** SD's safety checker's feature extractor (CLIPImageProcessor): shortest edge 224 bicubic, centre crop, CLIP mean/std. */
export const CLIP_PREPROCESS: ImagePreprocess = {
  resize: { kind: 'cover', shortestEdge: CLIP_SIZE, width: CLIP_SIZE, height: CLIP_SIZE },
  kernel: 'cubic',
  rescale: 1 / 255,
  mean: CLIP_MEAN,
  std: CLIP_STD,
};

const KERNELS: Record<NsfwPreprocess['resample'], Kernel> = { nearest: 'nearest', bilinear: 'linear', bicubic: 'cubic', lanczos: 'lanczos3' };
/** PIL's resample codes as transformers' image processors store them. */
const PIL_RESAMPLE: Record<number, Kernel> = { 0: 'nearest', 1: 'lanczos3', 2: 'linear', 3: 'cubic' };

/** The manifest's `nsfw.preprocess`. */
export function preprocessFromManifest(p: NsfwPreprocess): ImagePreprocess {
  const resize = p.resize === 'cover' ? { kind: 'cover' as const, shortestEdge: p.size, width: p.size, height: p.size } : { kind: 'stretch' as const, width: p.size, height: p.size };
  return { resize, kernel: KERNELS[p.resample], rescale: 1 / 255, mean: p.mean, std: p.std };
}

const isRgb = (v: unknown): v is Rgb => Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'number' && Number.isFinite(x));

/**
 * A Hugging Face preprocessor_config.json (CLIPImageProcessor, ViTImageProcessor and the like):
 * size {height,width} or {shortest_edge} (+ do_center_crop, crop_size), resample, do_rescale,
 * rescale_factor, do_normalize, image_mean, image_std. Throws naming the field it cannot use.
 */
export function preprocessFromConfig(json: Record<string, unknown>, file: string): ImagePreprocess {
  const fail = (what: string): never => {
    throw new Error(`${file}: ${what}`);
  };
  const size = json.size as Record<string, unknown> | number | undefined;
  const crop = json.crop_size as Record<string, unknown> | number | undefined;
  const side = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
  let resize: ImagePreprocess['resize'];
  if (json.do_resize === false) fail('do_resize is false; the checker needs a fixed input size (set nsfw.preprocess in the manifest)');
  if (typeof size === 'object' && side(size.height) && side(size.width)) {
    resize = { kind: 'stretch', width: side(size.width)!, height: side(size.height)! };
  } else if ((typeof size === 'object' && side(size.shortest_edge)) || side(size)) {
    const edge = side(size) ?? side((size as Record<string, unknown>).shortest_edge)!;
    const c = json.do_center_crop === false ? undefined : typeof crop === 'object' ? { width: side(crop.width), height: side(crop.height) } : { width: side(crop), height: side(crop) };
    if (!c?.width || !c.height) fail('size.shortest_edge needs do_center_crop with crop_size (a fixed input size)');
    resize = { kind: 'cover', shortestEdge: edge, width: c!.width!, height: c!.height! };
  } else {
    return fail(`size ${JSON.stringify(size)} is neither {height, width} nor {shortest_edge}`);
  }
  const resample = json.resample ?? 3;
  const kernel = PIL_RESAMPLE[resample as number] ?? fail(`resample ${JSON.stringify(resample)} is not one of nearest (0), lanczos (1), bilinear (2), bicubic (3)`);
  const rescale = json.do_rescale === false ? 1 : typeof json.rescale_factor === 'number' ? json.rescale_factor : 1 / 255;
  const normalise = json.do_normalize !== false;
  const mean = normalise ? json.image_mean : [0, 0, 0];
  const std = normalise ? json.image_std : [1, 1, 1];
  if (!isRgb(mean) || !isRgb(std) || std.some((s) => s <= 0)) fail('image_mean and image_std must be three numbers each (std above 0)');
  return { resize, kernel, rescale, mean: mean as Rgb, std: std as Rgb };
}

/**
 * The preprocessing of a checker graph: the manifest's when given, else the
 * preprocessor_config.json in the graph's folder, else `fallback` (or an error when there is none).
 */
export async function loadPreprocess(dir: string, fromManifest: NsfwPreprocess | undefined, fallback: ImagePreprocess | undefined, field: string): Promise<ImagePreprocess> {
  if (fromManifest) return preprocessFromManifest(fromManifest);
  const file = join(dir, 'preprocessor_config.json');
  const present = await access(file).then(
    () => true,
    () => false,
  );
  if (!present) {
    if (fallback) return fallback;
    throw new Error(`${field}: needed, as ${file} does not exist (give size, resize, mean and std)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  return preprocessFromConfig(json as Record<string, unknown>, file);
}

/**
 * What the checker must see of `image` to see all of it. A cover resize keeps the centre crop
 * alone, so a 16:9 output would be checked on its middle 56%: such an image is checked as
 * windows of the crop's aspect along its long side, spread evenly from one end to the other
 * (overlapping), each flagged on its own. A stretch resize sees everything: the image itself.
 */
export function checkerViews(image: RawImage, p: ImagePreprocess): RawImage[] {
  if (p.resize.kind === 'stretch') return [image];
  const aspect = p.resize.width / p.resize.height;
  const wide = image.width / image.height > aspect;
  const window = wide
    ? { width: Math.min(image.width, Math.round(image.height * aspect)), height: image.height }
    : { width: image.width, height: Math.min(image.height, Math.round(image.width / aspect)) };
  const long = wide ? image.width : image.height;
  const side = wide ? window.width : window.height;
  // Within a pixel or two of the crop's aspect: the centre crop is the whole image.
  if (long - side <= 2) return [image];
  const count = Math.ceil(long / side);
  return Array.from({ length: count }, (_, i) => {
    const at = Math.round((i * (long - side)) / (count - 1));
    return cropImage(image, wide ? { x: at, y: 0, ...window } : { x: 0, y: at, ...window });
  });
}

/** Resized (and cropped) as `p` says, RGB. */
export async function resizeForChecker(image: RawImage, p: ImagePreprocess): Promise<RawImage> {
  let pipeline = sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } }).removeAlpha().toColourspace('srgb');
  const { resize } = p;
  if (resize.kind === 'stretch') pipeline = pipeline.resize(resize.width, resize.height, { fit: 'fill', kernel: p.kernel });
  else if (resize.shortestEdge === resize.width && resize.shortestEdge === resize.height) {
    pipeline = pipeline.resize(resize.width, resize.height, { fit: 'cover', position: 'centre', kernel: p.kernel });
  } else {
    // Shortest edge first, then the centre crop (sides rounded as transformers rounds them).
    const scale = resize.shortestEdge / Math.min(image.width, image.height);
    const w = Math.max(resize.width, Math.round(image.width * scale));
    const h = Math.max(resize.height, Math.round(image.height * scale));
    const { data, info } = await pipeline.resize(w, h, { fit: 'fill', kernel: p.kernel }).raw().toBuffer({ resolveWithObject: true });
    pipeline = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels as 3 } }).extract({
      left: Math.floor((w - resize.width) / 2),
      top: Math.floor((h - resize.height) / 2),
      width: resize.width,
      height: resize.height,
    });
  }
  const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
  return rawImage(new Uint8Array(data.buffer, data.byteOffset, data.length), info.width, info.height, info.channels as 3);
}

/** Images resized as `p` says, normalised into one NCHW batch (and the resized images, for graphs that take them too). */
export async function checkerBatch(images: readonly RawImage[], p: ImagePreprocess): Promise<{ pixels: Float32Array; dims: [number, 3, number, number]; resized: RawImage[] }> {
  const resized = await Promise.all(images.map((image) => resizeForChecker(image, p)));
  const { width, height } = p.resize;
  const plane = width * height;
  const pixels = new Float32Array(resized.length * 3 * plane);
  // (v·rescale − mean)/std per channel, as one table lookup per value.
  const tables = [0, 1, 2].map((c) => Float32Array.from({ length: 256 }, (_, v) => (v * p.rescale - p.mean[c]!) / p.std[c]!));
  const [r, g, b] = tables as [Float32Array, Float32Array, Float32Array];
  resized.forEach((image, i) => {
    const d = image.data;
    const base = i * 3 * plane;
    for (let q = 0, s = 0; q < plane; q++, s += 3) {
      pixels[base + q] = r[d[s]!]!;
      pixels[base + plane + q] = g[d[s + 1]!]!;
      pixels[base + 2 * plane + q] = b[d[s + 2]!]!;
    }
  });
  return { pixels, dims: [resized.length, 3, height, width], resized };
}

/** Splits a batch into runs the graph accepts: one image at a time when its batch axis is fixed at 1. */
export function batchSizes(n: number, fixedBatch: number | string | undefined): number[] {
  if (typeof fixedBatch !== 'number' || fixedBatch <= 0) return n > 0 ? [n] : [];
  if (fixedBatch !== 1) throw new Error(`batch axis fixed at ${fixedBatch}; only 1 or a free axis is supported`);
  return Array.from({ length: n }, () => 1);
}
