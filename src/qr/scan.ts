/**
 * The honest scan check: does a real decoder read exactly the expected text from this
 * image? ZXing-C++ and jsQR run over a short, fixed ladder of scales, a light blur and two
 * binarizers (design notes §6: artistic codes decode far better with the code spanning
 * ~200-400 px; phone decoders try more than one binarizer).
 * A read of any other text ends the check with `false`: an image that encodes something
 * else (or also encodes something else) must never pass.
 */
import { blur3, downscaleArea, toLuma, type LumaImage } from '../image/luma.ts';
import type { RawImage } from '../image/raw.ts';
import { decoders, type DecoderName, type ScanBinarizer } from './decoders.ts';

export type { DecoderName } from './decoders.ts';

export interface ScanOptions {
  /** Approximate side of the code in the image in px when the caller knows it (our own renders); default: the image's short side. */
  codeSide?: number;
  /** Upper bound on decode attempts (default: the full ladder, which is already bounded). */
  maxAttempts?: number;
  /** The rungs to run instead of SCAN_LADDER: for the bench's comparisons and tests. */
  ladder?: readonly Rung[];
}

export interface ScanVerdict {
  /** True only when a decoder returned exactly the expected text and nothing else. */
  scannable: boolean;
  /** Which decoder succeeded. */
  decoder?: DecoderName;
  /** Downscale factor of the attempt that succeeded (1 = native pixels). */
  scale?: number;
  blurred?: boolean;
  /** The binarizer of the attempt that succeeded, when not ZXing's default (LocalAverage). */
  binarizer?: ScanBinarizer;
  /** Decode attempts made. */
  attempts: number;
  /** Set when some decoder read a different text: the verdict is then false. */
  otherContent?: string;
}

export interface Decoded {
  text: string;
  decoder: DecoderName;
  scale: number;
  blurred: boolean;
  binarizer?: ScanBinarizer;
}

/** What the ladder tells its caller about the attempt that read something. */
export interface RungRead {
  decoder: DecoderName;
  scale: number;
  blurred: boolean;
  binarizer?: ScanBinarizer;
}

/**
 * One decode attempt: a decoder on the image scaled so the code spans about `codePx` pixels
 * ('native': the image itself, or for a huge image an area-averaged copy of at most
 * NATIVE_MAX_PIXELS), optionally after a 3x3 blur; ZXing rungs may pick another binarizer
 * or pass (decoders.ts). Never upscaled. A rung whose image would be within 15% of the scale
 * of one already tried the same way (decoder, blur, binarizer and passes) is skipped without
 * counting: it would mostly repeat that attempt.
 */
export interface Rung {
  readonly decoder: DecoderName;
  readonly codePx: number | 'native';
  readonly blur: boolean;
  /** ZXing only: its binarizer (default LocalAverage, the hybrid local-mean one). */
  readonly binarizer?: ScanBinarizer;
  /** ZXing only: a morphological closing of the binarized image when the first read fails. */
  readonly denoise?: boolean;
  /** MeanWindow only: window side (px at the rung's scale) and bias. */
  readonly window?: number;
  readonly bias?: number;
  /** ZXing only: its own downscaled retries. */
  readonly downscale?: boolean;
}

/** Rungs that decode the same image the same way except for scale. */
function sameMethod(a: Rung, b: Rung): boolean {
  const binarizer = (r: Rung) => `${r.binarizer ?? 'LocalAverage'}/${r.window}/${r.bias}`;
  return a.decoder === b.decoder && a.blur === b.blur && binarizer(a) === binarizer(b) && !!a.denoise === !!b.denoise && !!a.downscale === !!b.downscale;
}

/**
 * Cheapest and most likely first; every rung reads a different sampling or binarization of the
 * code, which is what rescues artistic codes (they pass or fail almost at random from one
 * sampling to the next). ZXing with its hybrid binarizer takes five: the code at ~400 px,
 * ~240 px blurred, the native pixels, ~200 px blurred and ~160 px. Then ZXing twice more on the
 * code at ~200 px binarized by a plain mean window (binarize.ts): 25 px wide with no bias, then
 * 15 px wide less 10 levels. Phone decoders carry that binarizer beside the hybrid one (WeChat's
 * tries a 25 px window less 10); it keeps modules that the hybrid binarizer's ~40 px
 * neighbourhoods, or its blocks of under 24 levels of range, flatten into the art. On 440
 * images (demo-model art, codes stylized by image operations, phone captures of both) the two
 * rungs took the check from 271 to 289 reads, and from 391 to 407 images where it agrees with
 * the referees (ZBar, OpenCV, WeChat's decoder: it reads where one of them reads, and not where
 * none does): it misses 29 of the 314 codes a referee reads instead of 46, and reads 4 that
 * none reads instead of 3. A 15 px window with no bias read 19 more, 11 of them codes no
 * referee reads; ZXing's other binarizers, its denoise and downscale passes, more scales and
 * re-reading located codes module by module each added at most 7 reads (docs/scan-repair.md,
 * "Decoding"; scripts/bench/scan-corpus.ts). jsQR (several times slower, reads less, but
 * sometimes what ZXing misses) comes last, on the ~160 px image. Measured on the 2-core dev
 * machine: a ZXing rung costs 0.5-5 ms at SD, the jsQR rung 5-15 ms; the check takes ~3 ms
 * (median) on SD art it reads and ~100 ms at UltraHD, within the 40 ms and 200 ms it has, and
 * under ~170 ms on an image it cannot read (scripts/bench/scan-check.ts, scan-corpus.ts).
 */
export const SCAN_LADDER: readonly Rung[] = [
  { decoder: 'zxing', codePx: 400, blur: false },
  { decoder: 'zxing', codePx: 240, blur: true },
  { decoder: 'zxing', codePx: 'native', blur: false },
  { decoder: 'zxing', codePx: 200, blur: true },
  { decoder: 'zxing', codePx: 160, blur: false },
  { decoder: 'zxing', codePx: 200, blur: false, binarizer: 'MeanWindow', window: 25, bias: 0 },
  { decoder: 'zxing', codePx: 200, blur: false, binarizer: 'MeanWindow', window: 15, bias: 10 },
  { decoder: 'jsqr', codePx: 160, blur: false },
];

/** Above this many pixels the 'native' rung decodes an area-averaged copy (1024x1024 worth). */
export const NATIVE_MAX_PIXELS = 1024 * 1024;

/**
 * jsQR's cost grows with the image's area and explodes on noise and busy textures (~100 ms
 * for a noisy 400x400): its rungs use a smaller image when theirs would be over this.
 */
export const JSQR_MAX_PIXELS = 200 * 200;

/** Rungs closer than this factor of scale count as the same attempt. */
const SAME_SCALE = 1.15;

function maxAttemptsOf(options: ScanOptions): number {
  const max = options.maxAttempts ?? Infinity;
  if (max !== Infinity && (!Number.isInteger(max) || max < 0)) throw new RangeError(`maxAttempts must be a non-negative integer, got ${max}`);
  return max;
}

/**
 * The scaled images the ladder decodes, made on demand and shared by rungs. The largest
 * level the ladder needs is area-averaged from the source (a 4K frame is read once); every
 * smaller level is area-averaged from the smallest level already made that is larger than
 * it: much cheaper, at the price of a slightly wider footprint than one direct average.
 */
class Pyramid {
  /** Smallest downscale factor: 1, or what brings a huge source down to NATIVE_MAX_PIXELS. */
  private readonly floor: number;
  private readonly levels = new Map<number, LumaImage>();
  private readonly blurred = new Map<number, LumaImage>();

  constructor(
    private readonly source: RawImage,
    private readonly codeSide: number,
  ) {
    this.floor = Math.max(1, Math.sqrt((source.width * source.height) / NATIVE_MAX_PIXELS));
  }

  /** Downscale factor for a rung relative to the source, at least `floor` (no upscaling). */
  factor(codePx: number | 'native', maxPixels = Infinity): number {
    const wanted = codePx === 'native' ? 1 : this.codeSide / codePx;
    const cap = Math.sqrt((this.source.width * this.source.height) / maxPixels);
    // Two decimals: nearby factors give the same image, and a reported scale reads better.
    return Math.round(Math.max(this.floor, wanted, cap) * 100) / 100;
  }

  image(factor: number, blur: boolean): LumaImage {
    const level = this.level(factor);
    if (!blur) return level;
    let blurred = this.blurred.get(factor);
    if (!blurred) this.blurred.set(factor, (blurred = blur3(level)));
    return blurred;
  }

  /** Made before the first decode so that all later levels come from it, not the source. */
  prepare(largest: number): void {
    this.level(largest);
  }

  private level(factor: number): LumaImage {
    let level = this.levels.get(factor);
    if (level) return level;
    let from: LumaImage | undefined;
    let fromFactor = 0;
    for (const [f, l] of this.levels) if (f < factor && f > fromFactor) [from, fromFactor] = [l, f];
    const { width, height } = this.source;
    const w = Math.max(1, Math.min(width, Math.round(width / factor)));
    const h = Math.max(1, Math.min(height, Math.round(height / factor)));
    if (!from) level = factor === 1 ? toLuma(this.source) : downscaleArea(this.source, w, h);
    else level = downscaleArea(from, Math.min(w, from.width), Math.min(h, from.height));
    this.levels.set(factor, level);
    return level;
  }
}

/**
 * Runs the ladder until `stop` says so for some decoded text, making at most `maxAttempts`
 * attempts. Exported for the bench and tests; callers use scanCheck or decodeAny.
 */
export async function runLadder(
  image: RawImage,
  ladder: readonly Rung[],
  codeSide: number,
  stop: (texts: string[], rung: RungRead) => boolean,
  maxAttempts = Infinity,
): Promise<number> {
  const pyramid = new Pyramid(image, codeSide);
  // Decide up front which rungs run, so the pyramid can start from the largest image needed.
  const planned: Array<{ rung: Rung; scale: number }> = [];
  for (const rung of ladder) {
    if (planned.length >= maxAttempts) break;
    const scale = pyramid.factor(rung.codePx, rung.decoder === 'jsqr' ? JSQR_MAX_PIXELS : Infinity);
    const repeat = planned.some((p) => sameMethod(p.rung, rung) && Math.max(p.scale / scale, scale / p.scale) < SAME_SCALE);
    if (!repeat) planned.push({ rung, scale });
  }
  if (planned.length > 0) pyramid.prepare(Math.min(...planned.map((p) => p.scale)));
  let attempts = 0;
  for (const { rung, scale } of planned) {
    attempts++;
    const texts = await decoders[rung.decoder](pyramid.image(scale, rung.blur), rung);
    const read: RungRead = { decoder: rung.decoder, scale, blurred: rung.blur, ...(rung.binarizer && rung.binarizer !== 'LocalAverage' ? { binarizer: rung.binarizer } : {}) };
    if (texts.length > 0 && stop(texts, read)) break;
  }
  return attempts;
}

function codeSideOf(image: RawImage, options: ScanOptions): number {
  const side = options.codeSide ?? Math.min(image.width, image.height);
  if (!Number.isFinite(side) || side <= 0) throw new RangeError(`codeSide must be a positive number, got ${side}`);
  return side;
}

/**
 * Whether the image scans as exactly `expected`. Stops at the first attempt that decodes
 * anything: the expected text alone gives true; any other text gives false with
 * `otherContent`, even if another attempt might have read the expected one (an image a
 * phone may read as something else is not a scannable rendering of this content).
 */
export async function scanCheck(image: RawImage, expected: string, options: ScanOptions = {}): Promise<ScanVerdict> {
  let verdict: Omit<ScanVerdict, 'attempts'> = { scannable: false };
  const attempts = await runLadder(image, options.ladder ?? SCAN_LADDER, codeSideOf(image, options), (texts, rung) => {
    const other = texts.find((t) => t !== expected);
    verdict = other === undefined ? { scannable: true, ...rung } : { scannable: false, otherContent: other };
    return true;
  }, maxAttemptsOf(options));
  return { ...verdict, attempts };
}

/**
 * For client-supplied QR images: the first text any attempt decodes (null when none), same
 * ladder; `otherTexts` holds the other contents that attempt read (an image of several codes).
 */
export async function decodeAny(image: RawImage, options: ScanOptions = {}): Promise<(Decoded & { otherTexts: string[] }) | null> {
  let found: (Decoded & { otherTexts: string[] }) | null = null;
  await runLadder(image, options.ladder ?? SCAN_LADDER, codeSideOf(image, options), (texts, rung) => {
    const [text, ...otherTexts] = [...new Set(texts)];
    found = { text: text!, ...rung, otherTexts };
    return true;
  }, maxAttemptsOf(options));
  return found;
}
