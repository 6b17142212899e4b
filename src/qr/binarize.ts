/**
 * A binarizer ZXing-C++ does not have: every pixel against the plain mean of the square window
 * around it, less a bias. Phone decoders carry it beside ZXing's hybrid one (WeChat's
 * decoder, the one published QR-art scan rates are measured with, tries it after the hybrid
 * binarizer, with a 25 px window and a bias of 10): on art codes the hybrid binarizer's 8x8
 * blocks of 5x5 neighbours (~40 px) often flatten a module into its surroundings, where a
 * smaller window still sees it. The result goes to ZXing as 0/255 with its BoolCast binarizer.
 */
import { rawImage } from '../image/raw.ts';
import type { LumaImage } from '../image/luma.ts';

/** 0 where the pixel is darker than its window's mean less `bias`, else 255. `window` is odd, in px. */
export function meanWindowThreshold(luma: LumaImage, window = 25, bias = 10): LumaImage {
  const { width, height, data } = luma;
  const r = window >> 1;
  // Box sums by two running passes (rows, then columns), the window clipped at the edges.
  const rows = new Uint32Array(width * height);
  for (let y = 0; y < height; y++) {
    const o = y * width;
    let sum = 0;
    for (let x = 0; x <= Math.min(r, width - 1); x++) sum += data[o + x]!;
    for (let x = 0; x < width; x++) {
      rows[o + x] = sum;
      const enter = x + r + 1;
      const leave = x - r;
      if (enter < width) sum += data[o + enter]!;
      if (leave >= 0) sum -= data[o + leave]!;
    }
  }
  const out = new Uint8Array(width * height);
  const sums = new Uint32Array(width);
  for (let y = 0; y <= Math.min(r, height - 1); y++) for (let x = 0; x < width; x++) sums[x] = sums[x]! + rows[y * width + x]!;
  for (let y = 0; y < height; y++) {
    const h = Math.min(height - 1, y + r) - Math.max(0, y - r) + 1;
    for (let x = 0; x < width; x++) {
      const w = Math.min(width - 1, x + r) - Math.max(0, x - r) + 1;
      const i = y * width + x;
      out[i] = data[i]! * w * h < sums[x]! - bias * w * h ? 0 : 255;
    }
    const enter = y + r + 1;
    const leave = y - r;
    if (enter < height) for (let x = 0; x < width; x++) sums[x] = sums[x]! + rows[enter * width + x]!;
    if (leave >= 0) for (let x = 0; x < width; x++) sums[x] = sums[x]! - rows[leave * width + x]!;
  }
  return rawImage(out, width, height, 1) as LumaImage;
}
