/**
 * Encoded image bytes (client-supplied, so untrusted) <-> RawImage pixels.
 *
 * Every decode first sniffs the magic bytes (never a Content-Type or file name) and reads the
 * header to refuse oversized images before any pixel memory is allocated. Only the first frame
 * of an animated GIF/WebP is ever decoded.
 *
 * Error messages are written to follow a field name: `${field} ${err.message}`
 * reads as "qrImage is not a PNG, JPEG, WebP or GIF image ...".
 */
import sharp from 'sharp';
import type { Metadata, OutputInfo, Sharp, SharpOptions } from 'sharp';
import { rawImage } from './raw.ts';
import type { Channels, RawImage } from './raw.ts';

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif';

export const SUPPORTED_FORMATS_TEXT = 'PNG, JPEG, WebP or GIF';
const FORMAT_NAME: Record<ImageFormat, string> = { png: 'PNG', jpeg: 'JPEG', webp: 'WebP', gif: 'GIF' };

/** Bytes sniffImageFormat needs to decide (WebP: "RIFF" size "WEBP"). */
export const SNIFF_BYTES = 12;

/**
 * Sharp's strictest setting (its documented choice for untrusted input): damaged pixel data is
 * refused, not returned as a half-grey picture. A JPEG cut in the middle of its scan data but
 * ending with its end marker is only a libjpeg warning, so nothing looser will do as the rule.
 */
const FAIL_ON = 'warning' as const;

/**
 * The one libjpeg warning that says nothing about the pixels: stray bytes between two header
 * segments, common in phone and camera JPEGs that every browser shows. Such a file is decoded
 * again, as strictly, without them (withoutStrayHeaderBytes): libjpeg stops at the first
 * warning, so a looser decode could not tell them from damage further on.
 */
const STRAY_BYTES_WARNING = /^VipsJpeg: Corrupt JPEG data: \d+ extraneous bytes before marker 0x[0-9a-f]{2}$/i;

/**
 * The JPEG with bytes that lie between its header segments (before the scan data) dropped, or
 * null when there are none or the header cannot be walked. Each segment is FF, a marker and a
 * two-byte length; the scan (FF DA) and all after it are kept as they are.
 */
function withoutStrayHeaderBytes(bytes: Uint8Array): Uint8Array | null {
  const kept: Uint8Array[] = [bytes.subarray(0, 2)]; // SOI
  let pos = 2;
  let dropped = false;
  while (pos + 4 <= bytes.length) {
    if (bytes[pos] !== 0xff) {
      const next = bytes.indexOf(0xff, pos);
      if (next < 0) return null;
      dropped = true;
      pos = next;
      continue;
    }
    const marker = bytes[pos + 1]!;
    if (marker === 0xff) {
      pos++; // fill byte
      continue;
    }
    if (marker === 0xda) {
      kept.push(bytes.subarray(pos));
      return dropped ? Buffer.concat(kept) : null;
    }
    const end = pos + 2 + ((bytes[pos + 2]! << 8) | bytes[pos + 3]!);
    if (end > bytes.length) return null;
    kept.push(bytes.subarray(pos, end));
    pos = end;
  }
  return null;
}

/** A decode of at most maxPixels takes well under a second; longer means a pathological file. */
const DECODE_TIMEOUT_SECONDS = 30;

export type ImageDecodeErrorCode = 'not_an_image' | 'too_many_pixels' | 'corrupt_image';

export class ImageDecodeError extends Error {
  readonly code: ImageDecodeErrorCode;
  constructor(code: ImageDecodeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ImageDecodeError';
    this.code = code;
  }
}

export function isImageDecodeError(err: unknown): err is ImageDecodeError {
  return err instanceof ImageDecodeError;
}

function startsWith(bytes: Uint8Array, offset: number, ascii: string): boolean {
  if (bytes.length < offset + ascii.length) return false;
  for (let i = 0; i < ascii.length; i++) if (bytes[offset + i] !== ascii.charCodeAt(i)) return false;
  return true;
}

/** The format named by the file's magic bytes, or null (also for fewer than SNIFF_BYTES bytes of WebP). */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  if (bytes.length >= 8 && startsWith(bytes, 0, '\x89PNG\r\n\x1a\n')) return 'png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (startsWith(bytes, 0, 'GIF87a') || startsWith(bytes, 0, 'GIF89a')) return 'gif';
  if (startsWith(bytes, 0, 'RIFF') && startsWith(bytes, 8, 'WEBP')) return 'webp';
  return null;
}

export interface ImageHeader {
  format: ImageFormat;
  /** Size of the first frame after EXIF orientation, i.e. what decodeImage returns. */
  width: number;
  height: number;
  /** Frames in an animated GIF/WebP (1 otherwise); only the first is decoded. */
  pages: number;
  hasAlpha: boolean;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function megapixels(n: number): string {
  const mp = n / 1_000_000;
  if (mp < 0.1) return `${n} pixels`;
  return `${mp >= 10 ? Math.round(mp) : Math.round(mp * 10) / 10} megapixels`;
}

function libvipsText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
}

/**
 * Sniffs and reads the header only (no pixel decode), refusing non-images and images over
 * maxPixels. Cheap even for a 50,000 x 50,000 header.
 */
export async function readImageHeader(bytes: Uint8Array, maxPixels: number): Promise<ImageHeader> {
  const format = sniffImageFormat(bytes);
  if (format === null) {
    throw new ImageDecodeError(
      'not_an_image',
      `is not a ${SUPPORTED_FORMATS_TEXT} image (its content does not start like one of these formats)`,
    );
  }
  let meta: Metadata;
  try {
    // Header only: the pixel limit is applied below with a precise message, and again at decode.
    // Stray bytes before a marker do not make a header unreadable; the decode below is strict.
    meta = await sharp(asBuffer(bytes), { limitInputPixels: false, failOn: 'truncated' }).metadata();
  } catch (err) {
    throw new ImageDecodeError('not_an_image', `is not a readable ${FORMAT_NAME[format]} image (its header is damaged)`, {
      cause: err,
    });
  }
  // libvips chose its loader by itself; it must agree with our sniff (no other loader may run).
  if (meta.format !== format || !(meta.width > 0) || !(meta.height > 0)) {
    throw new ImageDecodeError('not_an_image', `is not a readable ${SUPPORTED_FORMATS_TEXT} image`);
  }
  const pixels = meta.width * meta.height;
  if (pixels > maxPixels) {
    throw new ImageDecodeError(
      'too_many_pixels',
      `is too large: ${meta.width} x ${meta.height} pixels (${megapixels(pixels)}); the limit is ${megapixels(maxPixels)}`,
    );
  }
  return {
    format,
    width: meta.autoOrient?.width ?? meta.width,
    height: meta.autoOrient?.height ?? meta.height,
    pages: meta.pages ?? 1,
    hasAlpha: meta.hasAlpha === true,
  };
}

function untrustedInput(bytes: Uint8Array, maxPixels: number): Sharp {
  const options: SharpOptions = {
    limitInputPixels: maxPixels, // second line of defence after readImageHeader
    failOn: FAIL_ON,
    autoOrient: true,
    pages: 1,
    page: 0,
  };
  return sharp(asBuffer(bytes), options).timeout({ seconds: DECODE_TIMEOUT_SECONDS });
}

/**
 * Decode an encoded image (first frame) to pixels, refusing more than maxPixels; EXIF
 * orientation applied. channels 3 flattens alpha onto white; channels 4 adds an opaque alpha
 * where there is none; omitted, the result has 4 channels when the image has alpha, else 3.
 * Output is 8-bit sRGB whatever the input (grey, 16-bit, CMYK, ICC profile).
 */
export async function decodeImage(bytes: Uint8Array, options: { maxPixels: number; channels?: 3 | 4 }): Promise<RawImage> {
  const header = await readImageHeader(bytes, options.maxPixels);
  const channels = options.channels ?? (header.hasAlpha ? 4 : 3);
  const decode = (input: Uint8Array) => {
    const pipeline = untrustedInput(input, options.maxPixels);
    return (
      channels === 3
        ? pipeline.flatten({ background: { r: 255, g: 255, b: 255 } }).toColourspace('srgb').removeAlpha()
        : pipeline.toColourspace('srgb').ensureAlpha()
    )
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
  };
  let out: { data: Buffer; info: OutputInfo };
  try {
    out = await decode(bytes).catch((err: unknown) => {
      const cleaned = header.format === 'jpeg' && STRAY_BYTES_WARNING.test(libvipsText(err)) ? withoutStrayHeaderBytes(bytes) : null;
      if (cleaned) return decode(cleaned);
      throw err;
    });
  } catch (err) {
    const text = libvipsText(err);
    if (/pixel limit/i.test(text)) {
      throw new ImageDecodeError('too_many_pixels', `is too large: the limit is ${megapixels(options.maxPixels)}`, { cause: err });
    }
    throw new ImageDecodeError(
      'corrupt_image',
      `could not be decoded: the ${FORMAT_NAME[header.format]} data is truncated or damaged (${text})`,
      { cause: err },
    );
  }
  if (out.info.channels !== channels) {
    throw new ImageDecodeError('corrupt_image', `could not be decoded to ${channels} channels`);
  }
  return rawImage(out.data, out.info.width, out.info.height, channels);
}

function rawInput(image: RawImage): Sharp {
  return sharp(asBuffer(image.data), {
    raw: { width: image.width, height: image.height, channels: image.channels },
  });
}

/** Keeps the channel count of the input (sharp may otherwise add or drop alpha / colour). */
function sameChannels(pipeline: Sharp, channels: Channels): Sharp {
  if (channels === 1) return pipeline.toColourspace('b-w').removeAlpha();
  if (channels === 3) return pipeline.toColourspace('srgb').removeAlpha();
  return pipeline.toColourspace('srgb').ensureAlpha();
}

/**
 * Resize to exactly width x height. fit 'contain' letterboxes with a background colour
 * (default white, opaque), 'cover' crops the centre, 'fill' stretches. Channels are kept.
 */
export async function resizeImage(
  image: RawImage,
  width: number,
  height: number,
  fit: 'contain' | 'cover' | 'fill',
  background: { r: number; g: number; b: number } = { r: 255, g: 255, b: 255 },
): Promise<RawImage> {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`resize target must be positive integers, got ${width}x${height}`);
  }
  const pipeline = rawInput(image).resize(width, height, {
    fit,
    position: 'centre',
    background: { ...background, alpha: 1 },
  });
  const out = await sameChannels(pipeline, image.channels).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  return rawImage(out.data, out.info.width, out.info.height, image.channels);
}

/** The `rect` of an image resized to exactly width × height (channels kept). */
export async function cropResize(image: RawImage, rect: { x: number; y: number; width: number; height: number }, width: number, height: number): Promise<RawImage> {
  const pipeline = rawInput(image).extract({ left: rect.x, top: rect.y, width: rect.width, height: rect.height }).resize(width, height, { fit: 'fill' });
  const out = await sameChannels(pipeline, image.channels).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  return rawImage(out.data, out.info.width, out.info.height, image.channels);
}

/** An image resized to width × height, then given a margin that repeats its edge pixels (channels kept). */
export async function resizeExtend(image: RawImage, width: number, height: number, margin: { left: number; top: number; right: number; bottom: number }): Promise<RawImage> {
  const pipeline = rawInput(image).resize(width, height, { fit: 'fill' }).extend({ ...margin, extendWith: 'copy' });
  const out = await sameChannels(pipeline, image.channels).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  return rawImage(out.data, out.info.width, out.info.height, image.channels);
}

/** PNG with the image's own channels (grey, RGB or RGBA). */
export async function encodePng(image: RawImage): Promise<Buffer> {
  return sameChannels(rawInput(image), image.channels).png().toBuffer();
}
