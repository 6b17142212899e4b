/**
 * ZXing's hybrid binarizer, as its thresholds: the binarizer of Java ZXing (the library many
 * phone apps and scan tests run) and of ZXing-C++. It cuts the image into 8x8 blocks and takes
 * each block's black point as its mean, except in a flat block (a luminance range of 24 levels
 * or less), which it takes for background: half its minimum, or its upper-left neighbours' black
 * point when its minimum is below theirs. A pixel is dark when it is at or below the mean black
 * point of the 5x5 blocks around its block.
 *
 * The flat-block rule is what a local mean misses: a flat mid-grey region next to a flat white
 * one (a finder's ring drawn in orange on a white quiet zone, a run of dark modules in light art)
 * gets a black point of half its own level and reads light. Measured on 300 repaired bench
 * images: Java ZXing found no finder pattern in images whose dark modules were ~150-170 levels
 * beside white, where ZBar read every capture.
 *
 * A phone sees the code with less contrast and more light than it was drawn with, so the
 * thresholds are those of the image under an exposure (the capture family's harsh end: contrast
 * 0.7 around the mean, 15 levels brighter), returned in the image's own levels.
 */

/** Luminance range at or under which the binarizer takes a block for flat background. */
const FLAT_RANGE = 24;
/** Block side, in the decoder's pixels. */
const BLOCK = 8;
/** The binarizer averages the black points of this many blocks each way around a block. */
const SPAN = 5;

export interface Exposure {
  /** Contrast around the frame's mean (1: as drawn). */
  readonly contrast: number;
  /** Levels added after the contrast. */
  readonly brightness: number;
}

/** The capture family's harsh end (capture-family.ts: contrast 0.7-0.9, brightness -15..15). */
export const HARSH_EXPOSURE: Exposure = Object.freeze({ contrast: 0.7, brightness: 15 });

/** A luminance image of `width` x `height` given by its box means (sum table or otherwise). */
export interface BoxMeans {
  readonly width: number;
  readonly height: number;
  /** Mean luminance over [x0, x1) x [y0, y1), in pixels; bounds within the image. */
  mean(x0: number, y0: number, x1: number, y1: number): number;
}

/**
 * The hybrid binarizer's threshold at each point (x, y in `image`'s pixels) when a decoder sees
 * the image reduced by `scale` (>= 1: image pixels per decoder pixel) under `exposure`, in the
 * image's own luminance levels. NaN where the reduced image is under ZXing's 40-pixel minimum
 * (it then binarizes globally instead).
 */
export function hybridThresholds(image: BoxMeans, scale: number, points: ArrayLike<number>, exposure: Exposure = HARSH_EXPOSURE): Float32Array {
  const out = new Float32Array(points.length / 2).fill(Number.NaN);
  const width = Math.floor(image.width / scale);
  const height = Math.floor(image.height / scale);
  if (width < SPAN * BLOCK || height < SPAN * BLOCK) return out;
  const mean = image.mean(0, 0, image.width, image.height);
  const { contrast, brightness } = exposure;
  const seen = new Float32Array(width * height);
  for (let v = 0; v < height; v++) {
    const y0 = Math.round(v * scale);
    const y1 = Math.max(y0 + 1, Math.round((v + 1) * scale));
    for (let u = 0; u < width; u++) {
      const x0 = Math.round(u * scale);
      const x1 = Math.max(x0 + 1, Math.round((u + 1) * scale));
      const level = mean + contrast * (image.mean(x0, y0, x1, y1) - mean) + brightness;
      seen[v * width + u] = Math.min(255, Math.max(0, level));
    }
  }
  const thresholds = blockThresholds(seen, width, height);
  const blocksX = Math.ceil(width / BLOCK);
  const blocksY = Math.ceil(height / BLOCK);
  for (let p = 0; p < out.length; p++) {
    const bx = Math.min(blocksX - 1, Math.max(0, Math.floor(points[2 * p]! / scale / BLOCK)));
    const by = Math.min(blocksY - 1, Math.max(0, Math.floor(points[2 * p + 1]! / scale / BLOCK)));
    // Back to the image's levels: the exposure undone.
    out[p] = mean + (thresholds[by * blocksX + bx]! - brightness - mean) / contrast;
  }
  return out;
}

/** Per block: the mean black point of the 5x5 blocks around it (kept inside the image). */
function blockThresholds(luma: Float32Array, width: number, height: number): Float32Array {
  const blocksX = Math.ceil(width / BLOCK);
  const blocksY = Math.ceil(height / BLOCK);
  const black = new Float32Array(blocksX * blocksY);
  for (let by = 0; by < blocksY; by++) {
    // The last row and column of blocks overlap their neighbours rather than leave the image.
    const y0 = Math.min(by * BLOCK, height - BLOCK);
    for (let bx = 0; bx < blocksX; bx++) {
      const x0 = Math.min(bx * BLOCK, width - BLOCK);
      let sum = 0;
      let min = 255;
      let max = 0;
      for (let y = y0; y < y0 + BLOCK; y++) {
        for (let x = x0, o = y * width + x0; x < x0 + BLOCK; x++, o++) {
          const v = luma[o]!;
          sum += v;
          if (v < min) min = v;
          if (v > max) max = v;
        }
      }
      // ZXing's rule in real numbers: its integer divisions move a threshold by under a level.
      let point = sum / (BLOCK * BLOCK);
      if (max - min <= FLAT_RANGE) {
        point = min / 2;
        if (bx > 0 && by > 0) {
          const neighbours = (black[(by - 1) * blocksX + bx]! + 2 * black[by * blocksX + bx - 1]! + black[(by - 1) * blocksX + bx - 1]!) / 4;
          if (min < neighbours) point = neighbours;
        }
      }
      black[by * blocksX + bx] = point;
    }
  }
  const half = (SPAN - 1) / 2;
  const out = new Float32Array(blocksX * blocksY);
  for (let by = 0; by < blocksY; by++) {
    const top = Math.min(blocksY - 1 - half, Math.max(half, by));
    for (let bx = 0; bx < blocksX; bx++) {
      const left = Math.min(blocksX - 1 - half, Math.max(half, bx));
      let sum = 0;
      for (let y = top - half; y <= top + half; y++) for (let x = left - half; x <= left + half; x++) sum += black[y * blocksX + x]!;
      out[by * blocksX + bx] = sum / (SPAN * SPAN);
    }
  }
  return out;
}
