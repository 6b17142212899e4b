/**
 * What a phone's camera does to a code, as a seeded family of simulated captures: the code
 * framed with some of its surroundings, at a size from far (the placed square spanning ~120
 * px of the frame) to close (~400 px), rotated up to ±10°, perspective-tilted, defocused and
 * smeared by a moving hand, under flatter contrast and uneven light (a gradient across the
 * frame, darker corners), with sensor noise, as JPEG at quality 60-85.
 *
 * Why a family and not one capture: a repair tuned to one capture model learns that model's
 * blind spots (a code read at 300 px can fail at 140 px, or under a motion streak). Each
 * image is judged over captures spread across the whole family (familyParams stratifies every
 * range), and held-out captures (another seed) referee the judgement (scripts/bench/scan.ts).
 *
 * Captures are luminance (1 channel): every decoder we run or referee with reads luminance
 * only, and a colour JPEG's luma plane is what a greyscale JPEG at the same quality stores.
 */
import sharp from 'sharp';
import type { LumaImage } from '../image/luma.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import { mulberry32 } from '../util/mulberry32.ts';
import { expose, frameSource, gaussianBlur, homography, motionBlur, multiply, reduceSource, warpLuma, type Exposure, type FrameSource, type Matrix3 } from './capture-warp.ts';

/** One capture's parameters: the geometry and optics here, the light and sensor in Exposure. */
export interface CaptureParams extends Exposure {
  /** Side in px the placed square (code + quiet zone) spans in the capture. */
  readonly codeSide: number;
  readonly rotationDeg: number;
  /** Largest corner displacement of the perspective, as a fraction of the frame's side. */
  readonly tilt: number;
  /** Defocus: Gaussian sigma in capture px. */
  readonly defocusSigma: number;
  /** Motion blur: length of the streak in capture px, and its direction. */
  readonly motionPx: number;
  readonly motionDeg: number;
  readonly jpegQuality: number;
}

type Range = readonly [number, number];

/**
 * The documented ranges of the family (docs/scan-repair.md). Blur, contrast and light are
 * bounded by what still leaves a plain printed code readable by both decoder families at the
 * family's hard end (test/qr/capture-family.test.ts holds the calibration).
 */
export const CAPTURE_FAMILY: Readonly<Record<keyof CaptureParams, Range>> = Object.freeze({
  codeSide: [120, 400],
  rotationDeg: [-10, 10],
  tilt: [0, 0.06],
  defocusSigma: [0.4, 1.2],
  motionPx: [0, 3],
  motionDeg: [0, 180],
  contrast: [0.7, 0.9],
  brightness: [-15, 15],
  lightGradient: [0, 0.3],
  lightDeg: [0, 360],
  vignette: [0, 0.25],
  noise: [1, 4],
  jpegQuality: [60, 85],
} as const);

/** Surroundings in the frame on each side of the placed square, as a share of its side. */
export const FRAME_PAD = 0.2;

const KEYS = Object.keys(CAPTURE_FAMILY) as Array<keyof CaptureParams>;
const ROUNDED: ReadonlySet<keyof CaptureParams> = new Set(['codeSide', 'jpegQuality']);

/**
 * How close a phone gets to a dense code: never so far that a module spans fewer than this many
 * px. A camera that cannot resolve the modules reads no code, plain or artistic, and a person
 * steps closer until it does; below ~5 px per module the plain control images of dense codes
 * (version 7 and up) stop reading under the family's blur (measured: docs/scan-repair.md).
 */
export const MIN_MODULE_PX = 5;

export interface FamilyOptions {
  /** Modules across the placed square (code + quiet zone): lifts the near end of codeSide to MIN_MODULE_PX per module. */
  readonly modules?: number;
  /** Overrides MIN_MODULE_PX (calibration runs). */
  readonly minModulePx?: number;
}

/** The code-side range for a code of `modules` modules across: [120, 400] lifted so a module spans at least minModulePx. */
export function codeSideRange(options: FamilyOptions = {}): Range {
  const [lo, hi] = CAPTURE_FAMILY.codeSide;
  const floor = (options.modules ?? 0) * (options.minModulePx ?? MIN_MODULE_PX);
  const near = Math.max(lo, Math.ceil(floor));
  return [near, Math.max(hi, near)];
}

/**
 * `count` captures stratified over the family (a Latin hypercube): each range is cut into
 * `count` equal strata and every stratum is used exactly once per parameter, so the code sides
 * spread evenly over 120-400 px (not all random), and so do blur, light and quality; which
 * stratum of one parameter meets which of another is the seed's draw. With `modules`, the code
 * side's range is lifted for dense codes (codeSideRange).
 */
export function familyParams(seed: number, count: number, options: FamilyOptions = {}): CaptureParams[] {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be a positive integer, got ${count}`);
  const random = mulberry32(seed);
  const columns = KEYS.map((key) => {
    const [lo, hi] = key === 'codeSide' ? codeSideRange(options) : CAPTURE_FAMILY[key];
    const strata = shuffled(count, random);
    return strata.map((s) => {
      const v = lo + ((hi - lo) * (s + random())) / count;
      return ROUNDED.has(key) ? Math.round(v) : v;
    });
  });
  return Array.from({ length: count }, (_, i) => Object.fromEntries(KEYS.map((key, k) => [key, columns[k]![i]!])) as unknown as CaptureParams);
}

function shuffled(n: number, random: () => number): number[] {
  const out = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Where the code (placed square, quiet zone included) is in the source image. */
export interface Square {
  x: number;
  y: number;
  side: number;
}

export interface Capture {
  /** The captured frame: luminance, JPEG-decoded. */
  readonly image: RawImage;
  /** Side in px the placed square spans in the capture. */
  readonly codeSide: number;
  readonly params: CaptureParams;
}

/** The largest code side of the family: a frame source never needs more detail than this. */
const MAX_CODE_SIDE = CAPTURE_FAMILY.codeSide[1];

/**
 * An image made ready for many captures: the frame's luminance, reduced once so that the code
 * spans at most twice the family's largest side (each capture area-reduces from there).
 */
export interface CaptureSubject {
  readonly source: FrameSource;
  readonly square: Square;
}

/**
 * The frame around `square` (the whole image when the square is unknown: the image is then
 * treated as the code's placed square, its short side, centred).
 */
export function captureSubject(image: RawImage, square: Square | undefined): CaptureSubject {
  const sq = square ?? centredSquare(image);
  if (!(sq.side > 0)) throw new RangeError(`the code's square must have a positive side, got ${sq.side}`);
  const pad = sq.side * FRAME_PAD;
  const region = { x: sq.x - pad, y: sq.y - pad, width: sq.side + 2 * pad, height: sq.side + 2 * pad };
  return { source: frameSource(image, region, (2 * MAX_CODE_SIDE) / sq.side), square: sq };
}

function centredSquare(image: RawImage): Square {
  const side = Math.min(image.width, image.height);
  return { x: Math.floor((image.width - side) / 2), y: Math.floor((image.height - side) / 2), side };
}

/**
 * One simulated capture of `image`, the code at `square` (absent: the image's centred square).
 * Seeded: the same arguments give the same pixels.
 */
export async function simulateCapture(image: RawImage, square: Square | undefined, params: CaptureParams, seed = 1): Promise<Capture> {
  return captureOf(captureSubject(image, square), params, seed);
}

/** A capture of a prepared subject (what the robustness check runs per image, many times). */
export async function captureOf(subject: CaptureSubject, params: CaptureParams, seed = 1): Promise<Capture> {
  const { square } = subject;
  const scale = params.codeSide / square.side; // capture px per source px
  // Area-reduce to the capture's own scale first (what the sensor's pixels integrate), so the
  // warp that follows samples at about 1:1 and does not alias.
  const source = reduceSource(subject.source, scale);
  const frame = Math.max(16, Math.round(params.codeSide * (1 + 2 * FRAME_PAD)));
  const random = mulberry32(seed ^ 0x5bd1e995);
  const toSource = multiply(sourceFromIdeal(source, square, scale, frame), idealFromCaptured(frame, params.rotationDeg, params.tilt, random));
  const plane = motionBlur(warpLuma(source.luma, toSource, frame, frame), frame, frame, params.motionPx, params.motionDeg);
  gaussianBlur(plane, frame, frame, params.defocusSigma);
  const exposed = expose(plane, frame, frame, params, mulberry32(seed ^ 0x27d4eb2f));
  return { image: await jpegRoundTrip(exposed, params.jpegQuality), codeSide: params.codeSide, params };
}

/**
 * Ideal capture coordinates (the frame, square and upright, the code centred at `scale`) ->
 * source pixel coordinates of the reduced frame.
 */
function sourceFromIdeal(source: FrameSource, square: Square, scale: number, frame: number): Matrix3 {
  const k = source.scale / scale; // source px per ideal px
  const cx = (square.x + square.side / 2 - source.region.x) * source.scale;
  const cy = (square.y + square.side / 2 - source.region.y) * source.scale;
  return [k, 0, cx - (k * frame) / 2, 0, k, cy - (k * frame) / 2, 0, 0, 1];
}

/**
 * Captured pixel -> ideal pixel: the inverse of a rotation about the frame's centre and a
 * perspective that moves each corner by up to `tilt` of the frame's side.
 */
function idealFromCaptured(frame: number, degrees: number, tilt: number, random: () => number): Matrix3 {
  const a = (degrees * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const c = frame / 2;
  const corners: Array<[number, number]> = [[0, 0], [frame, 0], [frame, frame], [0, frame]];
  const moved = corners.map(([x, y]): [number, number] => {
    const jx = (random() * 2 - 1) * tilt * frame;
    const jy = (random() * 2 - 1) * tilt * frame;
    return [c + (x - c) * cos - (y - c) * sin + jx, c + (x - c) * sin + (y - c) * cos + jy];
  });
  return homography(moved, corners);
}

/** The phone's JPEG: encoded at `quality` and decoded again (greyscale: the luma plane). */
async function jpegRoundTrip(luma: LumaImage, quality: number): Promise<RawImage> {
  const raw = { raw: { width: luma.width, height: luma.height, channels: 1 as const } };
  const jpeg = await sharp(luma.data, raw).jpeg({ quality }).toBuffer();
  const { data, info } = await sharp(jpeg).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
  return rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, 1);
}
