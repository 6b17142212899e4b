/**
 * Client-like QR images for the locate tests: a module matrix drawn at any (fractional) module
 * size and offset with exact area coverage (antialiased edges, as a canvas or a resize draws them),
 * in any two colours, and blotches painted over it.
 */
import QRCode from 'qrcode';
import { rawImage, type RawImage } from '../../src/image/raw.ts';

export type Rgb = readonly [number, number, number];

export interface Drawing {
  /** Module side in px (may be fractional). */
  readonly pitch: number;
  /** Top-left corner of module (0, 0) in px (may be fractional). */
  readonly x: number;
  readonly y: number;
  /** Image size; default: the code with the same margin on the right and bottom. */
  readonly width?: number;
  readonly height?: number;
  readonly dark?: Rgb;
  readonly light?: Rgb;
}

/** The matrix of a `qrcode` symbol, 1 dark. */
export function darkOf(code: QRCode.QRCode): Uint8Array {
  return Uint8Array.from(code.modules.data as ArrayLike<number>, (v) => (v ? 1 : 0));
}

/** An RGB image of the matrix (n x n, 1 dark) drawn as `drawing` says. */
export function drawCode(dark: ArrayLike<number>, n: number, drawing: Drawing): RawImage {
  const { pitch, x: ox, y: oy } = drawing;
  const width = drawing.width ?? Math.ceil(2 * ox + n * pitch);
  const height = drawing.height ?? Math.ceil(2 * oy + n * pitch);
  const darkRgb = drawing.dark ?? [0, 0, 0];
  const lightRgb = drawing.light ?? [255, 255, 255];
  // Coverage of pixel [p, p + 1) by module k along one axis.
  const cover = (p: number, origin: number, k: number) => Math.max(0, Math.min(p + 1, origin + (k + 1) * pitch) - Math.max(p, origin + k * pitch));
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const r0 = Math.floor((y - oy) / pitch);
    for (let x = 0; x < width; x++) {
      const c0 = Math.floor((x - ox) / pitch);
      let share = 0;
      for (let r = r0; r <= r0 + 1; r++) {
        if (r < 0 || r >= n) continue;
        const cy = cover(y, oy, r);
        for (let c = c0; c <= c0 + 1; c++) if (c >= 0 && c < n && dark[r * n + c]) share += cy * cover(x, ox, c);
      }
      for (let ch = 0; ch < 3; ch++) data[(y * width + x) * 3 + ch] = Math.round(darkRgb[ch]! * share + lightRgb[ch]! * (1 - share));
    }
  }
  return rawImage(data, width, height, 3);
}

/** A filled disk (or square) of one colour painted over an RGB image, in place. */
export function paint(image: RawImage, shape: { cx: number; cy: number; radius: number; square?: boolean }, rgb: Rgb): RawImage {
  const { cx, cy, radius, square } = shape;
  for (let y = Math.max(0, Math.floor(cy - radius)); y < Math.min(image.height, Math.ceil(cy + radius)); y++) {
    for (let x = Math.max(0, Math.floor(cx - radius)); x < Math.min(image.width, Math.ceil(cx + radius)); x++) {
      const dx = x + 0.5 - cx;
      const dy = y + 0.5 - cy;
      if (square || dx * dx + dy * dy <= radius * radius) image.data.set(rgb, (y * image.width + x) * 3);
    }
  }
  return image;
}
