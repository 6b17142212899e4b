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
 *
 * Where the decoder's block grid falls is the capture's chance, and it decides which blocks are
 * flat: a module next to a darkened finder can read dark with the grid one way and light with it
 * half a block over. So the thresholds can be taken at several grid phases (HALF_BLOCK_PHASES).
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
 * Where a decoder's 8x8 block grid falls on the image, in decoder pixels from the image's corner:
 * a capture's chance, and whether a block is flat depends on it.
 */
export type GridPhase = readonly [x: number, y: number];

/** The grid as the image's own corner sets it. */
const ALIGNED: readonly GridPhase[] = [[0, 0]];

/** The grid at whole and half blocks across and down. */
export const HALF_BLOCK_PHASES: readonly GridPhase[] = Object.freeze([[0, 0], [BLOCK / 2, 0], [0, BLOCK / 2], [BLOCK / 2, BLOCK / 2]] as const);

/**
 * The hybrid binarizer's threshold at each point (x, y in `image`'s pixels) when a decoder sees
 * the image reduced by `scale` (>= 1: image pixels per decoder pixel) under `exposure`, in the
 * image's own luminance levels. NaN where the reduced image is under ZXing's 40-pixel minimum
 * (it then binarizes globally instead).
 */
export function hybridThresholds(image: BoxMeans, scale: number, points: ArrayLike<number>, exposure: Exposure = HARSH_EXPOSURE): Float32Array {
  return hybridThresholdMaps(image, scale, points, [exposure])[0]!;
}

/**
 * hybridThresholds at every grid phase (the decoder's image then starts that many decoder pixels
 * into this one) and exposure, phase by phase, exposures within: one map per pair. The image is
 * reduced once, and a phase whose grid lies on half blocks takes its blocks' ranges from the
 * 4x4 quarters they are made of: eight views (four phases, two exposures) took about a third
 * more time than one view computed pixel by pixel (docs/scan-repair.md).
 */
export function hybridThresholdMaps(
  image: BoxMeans,
  scale: number,
  points: ArrayLike<number>,
  exposures: readonly Exposure[],
  phases: readonly GridPhase[] = ALIGNED,
): Float32Array[] {
  const width = Math.floor(image.width / scale);
  const height = Math.floor(image.height / scale);
  const mean = image.mean(0, 0, image.width, image.height);
  const luma = reduced(image, scale, width, height);
  const quarters = quarterStats(luma, width, height);
  const maps: Float32Array[] = [];
  for (const phase of phases) {
    const stats = blockStats(luma, width, height, phase, quarters);
    for (const exposure of exposures) maps.push(thresholdsAt(points, scale, phase, stats, luma, width, mean, exposure));
  }
  return maps;
}

/** The image as a decoder sees it at `scale`: each decoder pixel the mean of the image pixels it covers. */
function reduced(image: BoxMeans, scale: number, width: number, height: number): Float32Array {
  const luma = new Float32Array(width * height);
  for (let v = 0; v < height; v++) {
    const y0 = Math.round(v * scale);
    const y1 = Math.max(y0 + 1, Math.round((v + 1) * scale));
    for (let u = 0; u < width; u++) {
      const x0 = Math.round(u * scale);
      const x1 = Math.max(x0 + 1, Math.round((u + 1) * scale));
      luma[v * width + u] = image.mean(x0, y0, x1, y1);
    }
  }
  return luma;
}

const QUARTER = BLOCK / 2;

/** Sum, minimum and maximum of each whole 4x4 quarter block, from the image's corner. */
interface Quarters {
  readonly across: number;
  readonly sum: Float32Array;
  readonly min: Float32Array;
  readonly max: Float32Array;
}

function quarterStats(luma: Float32Array, width: number, height: number): Quarters {
  const across = Math.floor(width / QUARTER);
  const down = Math.floor(height / QUARTER);
  const sum = new Float32Array(across * down);
  const min = new Float32Array(across * down).fill(Infinity);
  const max = new Float32Array(across * down).fill(-Infinity);
  for (let y = 0; y < down * QUARTER; y++) {
    const row = Math.floor(y / QUARTER) * across;
    for (let x = 0, o = y * width; x < across * QUARTER; x++, o++) {
      const q = row + ((x / QUARTER) | 0);
      const v = luma[o]!;
      sum[q] = sum[q]! + v;
      if (v < min[q]!) min[q] = v;
      if (v > max[q]!) max[q] = v;
    }
  }
  return { across, sum, min, max };
}

/** Each block's pixel mean, minimum and maximum under one grid phase, before any exposure. */
interface BlockStats {
  readonly across: number;
  readonly down: number;
  /** The blocks' upper-left pixels, in the reduced image (for a block read again under a clamping exposure). */
  readonly x0: Int32Array;
  readonly y0: Int32Array;
  readonly mean: Float32Array;
  readonly min: Float32Array;
  readonly max: Float32Array;
}

function blockStats(luma: Float32Array, width: number, height: number, [px, py]: GridPhase, quarters: Quarters): BlockStats | undefined {
  const w = width - px;
  const h = height - py;
  if (w < SPAN * BLOCK || h < SPAN * BLOCK) return undefined;
  const across = Math.ceil(w / BLOCK);
  const down = Math.ceil(h / BLOCK);
  const n = across * down;
  const stats = { across, down, x0: new Int32Array(n), y0: new Int32Array(n), mean: new Float32Array(n), min: new Float32Array(n), max: new Float32Array(n) };
  const q = quarters;
  for (let by = 0; by < down; by++) {
    // The last row and column of blocks overlap their neighbours rather than leave the image.
    const y0 = py + Math.min(by * BLOCK, h - BLOCK);
    for (let bx = 0; bx < across; bx++) {
      const x0 = px + Math.min(bx * BLOCK, w - BLOCK);
      const b = by * across + bx;
      stats.x0[b] = x0;
      stats.y0[b] = y0;
      if (x0 % QUARTER === 0 && y0 % QUARTER === 0) {
        const a = (y0 / QUARTER) * q.across + x0 / QUARTER;
        const c = a + q.across;
        stats.mean[b] = (q.sum[a]! + q.sum[a + 1]! + q.sum[c]! + q.sum[c + 1]!) / (BLOCK * BLOCK);
        stats.min[b] = Math.min(q.min[a]!, q.min[a + 1]!, q.min[c]!, q.min[c + 1]!);
        stats.max[b] = Math.max(q.max[a]!, q.max[a + 1]!, q.max[c]!, q.max[c + 1]!);
        continue;
      }
      let sum = 0;
      let min = Infinity;
      let max = -Infinity;
      for (let y = y0; y < y0 + BLOCK; y++) {
        for (let o = y * width + x0, end = o + BLOCK; o < end; o++) {
          const v = luma[o]!;
          sum += v;
          if (v < min) min = v;
          if (v > max) max = v;
        }
      }
      stats.mean[b] = sum / (BLOCK * BLOCK);
      stats.min[b] = min;
      stats.max[b] = max;
    }
  }
  return stats;
}

/** The thresholds at `points` under one phase and exposure, back in the image's levels. */
function thresholdsAt(
  points: ArrayLike<number>,
  scale: number,
  [px, py]: GridPhase,
  stats: BlockStats | undefined,
  luma: Float32Array,
  width: number,
  mean: number,
  exposure: Exposure,
): Float32Array {
  const out = new Float32Array(points.length / 2).fill(Number.NaN);
  if (!stats) return out;
  const { contrast, brightness } = exposure;
  const seen = (v: number) => Math.min(255, Math.max(0, mean + contrast * (v - mean) + brightness));
  const blocks = stats.mean.length;
  const blockMean = new Float32Array(blocks);
  const blockMin = new Float32Array(blocks);
  const blockMax = new Float32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    blockMin[b] = seen(stats.min[b]!);
    blockMax[b] = seen(stats.max[b]!);
    const unclamped = mean + contrast * (stats.min[b]! - mean) + brightness >= 0 && mean + contrast * (stats.max[b]! - mean) + brightness <= 255;
    // The exposure is linear until it clamps: a block it clamps is averaged pixel by pixel.
    blockMean[b] = unclamped ? seen(stats.mean[b]!) : clampedMean(luma, width, stats.x0[b]!, stats.y0[b]!, seen);
  }
  const thresholds = blockThresholds(blockMean, blockMin, blockMax, stats.across, stats.down);
  for (let p = 0; p < out.length; p++) {
    const bx = Math.min(stats.across - 1, Math.max(0, Math.floor((points[2 * p]! / scale - px) / BLOCK)));
    const by = Math.min(stats.down - 1, Math.max(0, Math.floor((points[2 * p + 1]! / scale - py) / BLOCK)));
    // Back to the image's levels: the exposure undone.
    out[p] = mean + (thresholds[by * stats.across + bx]! - brightness - mean) / contrast;
  }
  return out;
}

function clampedMean(luma: Float32Array, width: number, x0: number, y0: number, seen: (v: number) => number): number {
  let sum = 0;
  for (let y = y0; y < y0 + BLOCK; y++) for (let o = y * width + x0, end = o + BLOCK; o < end; o++) sum += seen(luma[o]!);
  return sum / (BLOCK * BLOCK);
}

/** Per block: the mean black point of the 5x5 blocks around it (kept inside the image). */
function blockThresholds(blockMean: Float32Array, blockMin: Float32Array, blockMax: Float32Array, blocksX: number, blocksY: number): Float32Array {
  const black = new Float32Array(blocksX * blocksY);
  for (let by = 0; by < blocksY; by++) {
    for (let bx = 0; bx < blocksX; bx++) {
      const b = by * blocksX + bx;
      const min = blockMin[b]!;
      // ZXing's rule in real numbers: its integer divisions move a threshold by under a level.
      let point = blockMean[b]!;
      if (blockMax[b]! - min <= FLAT_RANGE) {
        point = min / 2;
        if (bx > 0 && by > 0) {
          const neighbours = (black[b - blocksX]! + 2 * black[b - 1]! + black[b - blocksX - 1]!) / 4;
          if (min < neighbours) point = neighbours;
        }
      }
      black[b] = point;
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

/**
 * The lightest level (the image's levels) that a flat dark region can have and still read dark
 * beside flat light of level `light` when a decoder sees them under `exposure`, the frame's mean
 * being `mean`. A block inside a wide dark run (a finder's ring or centre, once a capture's grid
 * falls inside it) is flat, and so are the light blocks around it: every black point there is
 * half a block's minimum, so the run reads dark only while it is darker than half the light
 * around it. Local means and module-aligned blocks do not see this; measured on held-out
 * captures of 300 repaired bench images: 8 of the 12 captures Java ZXing missed found no third
 * finder, its dark ring mid-grey (~120-130 levels beside ~235) and read light along a side.
 */
export function flatDarkLimit(light: number, mean: number, exposure: Exposure = HARSH_EXPOSURE): number {
  const { contrast, brightness } = exposure;
  const seenLight = Math.min(255, Math.max(0, mean + contrast * (light - mean) + brightness));
  return mean + (seenLight / 2 - brightness - mean) / contrast;
}
