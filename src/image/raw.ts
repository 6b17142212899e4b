/**
 * Decoded pixels as they travel between the QR layer, the image layer and the pipeline:
 * row-major, interleaved 8-bit channels, no padding between rows. 1 channel is luminance,
 * 3 is RGB, 4 is RGBA. Files (PNG, JPEG...) exist only at the edges (fetch, store, CLI).
 */
export type Channels = 1 | 3 | 4;

export interface RawImage {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: Channels;
}

export function rawImage(data: Uint8Array, width: number, height: number, channels: Channels): RawImage {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`image size must be positive integers, got ${width}x${height}`);
  }
  if (data.length !== width * height * channels) {
    throw new RangeError(`pixel buffer holds ${data.length} bytes, expected ${width}x${height}x${channels} = ${width * height * channels}`);
  }
  return { data, width, height, channels };
}

/** The negative of an opaque image (every channel v -> 255 - v); alpha, when there is one, kept. */
export function invertImage(image: RawImage): RawImage {
  const data = new Uint8Array(image.data.length);
  for (let i = 0; i < data.length; i++) data[i] = image.channels === 4 && i % 4 === 3 ? image.data[i]! : 255 - image.data[i]!;
  return rawImage(data, image.width, image.height, image.channels);
}
