/**
 * The part of the image the check reads and the repair writes: the code, its quiet zone and as
 * far around as the widest read reaches. Its luminance is held as floats (repairs write their
 * new values there, and recolour carries them back into the image), with a sum table for box
 * means and a mark on each pixel a repair changed.
 */
import { WB, WG, WR } from '../../image/luma.ts';
import type { RawImage } from '../../image/raw.ts';
import type { Footprint } from './footprint.ts';

/** A rectangle in image pixels; it may reach past the image's edges. */
export interface Region {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export class LumaPlane {
  readonly region: Region;
  /** Luminance of the region; repairs write their new values here. */
  readonly luma: Float32Array;
  /** 1 for every region pixel a repair changed. */
  readonly touched: Uint8Array;
  /** Sum table of luma with a leading row and column of zeros (updateSums). */
  private readonly integral: Float64Array;

  constructor(image: RawImage, region: Region) {
    this.region = region;
    const { width, height } = region;
    this.luma = new Float32Array(width * height);
    this.integral = new Float64Array((width + 1) * (height + 1));
    this.touched = new Uint8Array(width * height);
    readLuma(image, region, this.luma);
  }

  /** Brings the sum table up to date with luma: after repairs, before means are taken. */
  updateSums(): void {
    const { width, height } = this.region;
    const stride = width + 1;
    const { luma, integral } = this;
    for (let y = 0; y < height; y++) {
      let row = 0;
      const from = y * width;
      const up = y * stride;
      const to = up + stride;
      for (let x = 0; x < width; x++) {
        row += luma[from + x]!;
        integral[to + x + 1] = integral[up + x + 1]! + row;
      }
    }
  }

  /** Mean luminance over the square of side `w` centred on (cx, cy) (region coordinates), cut to the region. */
  boxMean(cx: number, cy: number, w: number): number {
    const { width, height } = this.region;
    const x0 = Math.max(0, Math.round(cx - w / 2));
    const y0 = Math.max(0, Math.round(cy - w / 2));
    const x1 = Math.min(width, Math.round(cx + w / 2));
    const y1 = Math.min(height, Math.round(cy + w / 2));
    return this.rectMean(x0, y0, x1, y1);
  }

  /** Mean luminance over [x0, x1) x [y0, y1) (region coordinates, within the region). */
  rectMean(x0: number, y0: number, x1: number, y1: number): number {
    const stride = this.region.width + 1;
    const s = this.integral;
    return (s[y1 * stride + x1]! - s[y0 * stride + x1]! - s[y1 * stride + x0]! + s[y0 * stride + x0]!) / ((x1 - x0) * (y1 - y0));
  }

  /** Weighted sum of luma over a footprint's first `count` pixels at `base`. */
  sum(base: number, f: Footprint, count = f.offsets.length): number {
    const { luma } = this;
    let v = 0;
    for (let k = 0; k < count; k++) v += f.weights[k]! * luma[base + f.offsets[k]!]!;
    return v;
  }
}

/** Luminance of the region; outside the image, the nearest edge pixel's. */
function readLuma(image: RawImage, region: Region, out: Float32Array): void {
  const { data, width, height, channels } = image;
  const column = Int32Array.from({ length: region.width }, (_, x) => Math.min(width - 1, Math.max(0, region.x + x)) * channels);
  for (let y = 0; y < region.height; y++) {
    const row = Math.min(height - 1, Math.max(0, region.y + y)) * width * channels;
    const o = y * region.width;
    if (channels === 1) {
      for (let x = 0; x < region.width; x++) out[o + x] = data[row + column[x]!]!;
    } else {
      for (let x = 0; x < region.width; x++) {
        const s = row + column[x]!;
        out[o + x] = (WR * data[s]! + WG * data[s + 1]! + WB * data[s + 2]!) / 1024;
      }
    }
  }
}
