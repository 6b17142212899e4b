/**
 * Where a client's QR code is in their image, module by module: what lets the worker repair the
 * art generated over a client's own code (v1-v3b) as it repairs the art over our renders.
 *
 * ZXing reads the image at native resolution and reports the code's corners, its version, EC level
 * and mask, and the module matrix as it sampled it (its `symbol`: no quiet zone, 0 dark, 255 light).
 * The matrix used is the truth where it can be had: the decoded content re-encoded with the same
 * version, EC level and mask by the `qrcode` package, in the segment choices of the common encoders
 * (ours and qrcode's optimal split, one segment in the tightest mode, one byte segment of the raw
 * bytes). A re-encoding is the client's code when it differs from the sampled symbol in no more
 * codewords than EC can correct (a logo, a colour blotch, a smudged module): a different encoder's
 * bitstream differs in nearly all EC codewords, twice that. When none matches, the sampled matrix
 * is used as it is (`matrixSource: 'sampled'`), errors and all: the client's drawing is what the art
 * follows, and it decodes.
 *
 * The grid's position comes from the code's own module edges (locate-fit.ts), to a fraction of a
 * pixel. Only codes that are axis-aligned and undistorted are located (a screenshot, a generated
 * PNG: what v1-v3b are sent); a rotated, mirrored, perspective or warped code (a photo) is refused
 * with a reason, and the job's images are then only checked.
 */
import QRCode from 'qrcode';
import { getTotalCodewordsCount } from 'qrcode/lib/core/error-correction-code.js';
import { from as eccFrom } from 'qrcode/lib/core/error-correction-level.js';
import { readBarcodes, type ReaderOptions, type ReadResult } from 'zxing-wasm/reader';
import { toLuma, type LumaImage } from '../image/luma.ts';
import type { RawImage } from '../image/raw.ts';
import { codewordMap } from './codewords.ts';
import { pgm, zxingModule } from './decoders.ts';
import { ERROR_CORRECTION_LEVELS, matrixOfSymbol, type ErrorCorrectionLevel, type QrMatrix } from './encode.ts';
import { fitAxis, transpose, transposeModel, type AxisFit, type GridModel } from './locate-fit.ts';

/** A located code: its matrix and where its modules are in the image. */
export interface LocatedQr {
  readonly located: true;
  readonly text: string;
  readonly matrix: QrMatrix;
  /** Where the matrix comes from: the content re-encoded as the client's encoder did it, or the modules as sampled from the image. */
  readonly matrixSource: 're-encoded' | 'sampled';
  /** Modules where the image's drawing (as ZXing sampled it) differs from `matrix`: 0 for a clean code. */
  readonly misdrawnModules: number;
  readonly mask: number;
  /** Top-left corner of module (0, 0), in image pixels (fractional). */
  readonly origin: { readonly x: number; readonly y: number };
  /** Module side in image pixels along x and y (fractional). */
  readonly pitch: { readonly x: number; readonly y: number };
}

export interface UnlocatedQr {
  readonly located: false;
  /** Why, for the logs: the job's images are then only checked. */
  readonly reason: string;
}

/** Most rotation (degrees) ZXing may report for a code taken as axis-aligned. */
const MAX_ROTATION = 1;
/** Most distance (modules) a rotation or perspective may put the code's corner modules off an axis-aligned grid. */
const MAX_DRIFT = 0.2;
/** Most RMS distance (modules) of the module edges from a straight grid. */
const MAX_RMS = 0.12;
/** Most difference between the pitches along x and y. */
const MAX_ANISOTROPY = 0.03;
/** Smallest module side (px) whose edges can be measured. */
const MIN_PITCH = 1.5;

// As decoders.ts reads (QR Model 2 only, no inverted codes, UTF-8 when the code has no ECI), on the image
// as it is (ZXing's own downscaled tries report positions in the image's pixels too).
const readerOptions: ReaderOptions = {
  formats: ['QRCodeModel2'],
  tryHarder: true,
  tryRotate: false,
  tryInvert: false,
  tryDownscale: true,
  tryDenoise: false,
  isPure: false,
  maxNumberOfSymbols: 4,
  textMode: 'Plain',
  characterSet: 'UTF8',
};

/**
 * The code in `image` whose text is `expected` (what decodeAny read), located module by module,
 * or the reason it cannot be.
 */
export async function locateQr(image: RawImage, expected: string): Promise<LocatedQr | UnlocatedQr> {
  const luma = toLuma(image);
  await zxingModule();
  const results = (await readBarcodes(pgm(luma), readerOptions)).filter((r) => r.isValid);
  const found = results.filter((r) => r.text === expected);
  if (found.length === 0) return refuse(results.length === 0 ? 'ZXing finds no code at the image’s own resolution' : 'ZXing reads a different text at the image’s own resolution');
  if (results.length > 1) return refuse(`the image holds ${results.length} codes`);
  const read = found[0]!;
  const info = symbolInfo(read);
  if (typeof info === 'string') return refuse(info);
  if (read.isMirrored) return refuse('the code is mirrored');
  const rotation = ((read.rotation % 360) + 360) % 360;
  if (Math.min(rotation, 360 - rotation) > MAX_ROTATION) return refuse(`the code is rotated by ${read.rotation}°`);

  const { size } = info;
  const start = cornerEstimate(read, size);
  if (typeof start === 'string') return refuse(start);
  const smallest = Math.min(start.x.pitch, start.y.pitch);
  if (smallest < MIN_PITCH) return refuse(`modules of ${smallest.toFixed(1)} px are too small to locate`);

  const { matrix, source } = chooseMatrix(read, info);
  const usable = new Uint8Array(size * size);
  let misdrawnModules = 0;
  for (let i = 0; i < usable.length; i++) {
    usable[i] = matrix.dark[i] === info.sampled[i] ? 1 : 0;
    if (!usable[i]) misdrawnModules++;
  }
  const grid = fitGrid(luma, { size, dark: matrix.dark, usable }, start);
  if (typeof grid === 'string') return refuse(grid);
  return { located: true, text: read.text, matrix, matrixSource: source, misdrawnModules, mask: info.mask, origin: { x: grid.x.origin, y: grid.y.origin }, pitch: { x: grid.x.pitch, y: grid.y.pitch } };
}

function refuse(reason: string): UnlocatedQr {
  return { located: false, reason };
}

interface SymbolInfo {
  readonly size: number;
  readonly version: number;
  readonly level: ErrorCorrectionLevel;
  readonly mask: number;
  /** The matrix as ZXing sampled it: 1 dark. */
  readonly sampled: Uint8Array;
}

/** Version, EC level and mask from `extra`, and the symbol as a matrix; a reason when they are not a QR code's. */
function symbolInfo(read: ReadResult): SymbolInfo | string {
  let extra: { Version?: unknown; ECLevel?: unknown; DataMask?: unknown };
  try {
    extra = JSON.parse(read.extra || '{}');
  } catch {
    return 'ZXing gave no version, EC level and mask';
  }
  const version = Number(extra.Version);
  const level = String(extra.ECLevel) as ErrorCorrectionLevel;
  const mask = Number(extra.DataMask);
  if (!Number.isInteger(version) || version < 1 || version > 40 || !ERROR_CORRECTION_LEVELS.includes(level) || !Number.isInteger(mask) || mask < 0 || mask > 7) {
    return `ZXing gave no usable version, EC level and mask (${read.extra})`;
  }
  const size = 17 + 4 * version;
  const { symbol } = read;
  if (symbol.width !== size || symbol.height !== size) return `the symbol ZXing sampled is ${symbol.width}x${symbol.height}, not the ${size}x${size} of version ${version}`;
  return { size, version, level, mask, sampled: Uint8Array.from(symbol.data, (v) => (v < 128 ? 1 : 0)) };
}

interface AxisStart {
  readonly origin: number;
  readonly pitch: number;
}

/**
 * The grid from ZXing's corners (whole pixels; the right and bottom ones are one past the code),
 * or a reason when they are not an axis-aligned square.
 */
function cornerEstimate(read: ReadResult, size: number): { x: AxisStart; y: AxisStart } | string {
  const { topLeft: tl, topRight: tr, bottomLeft: bl, bottomRight: br } = read.position;
  const x = { origin: (tl.x + bl.x) / 2, pitch: (tr.x - tl.x + br.x - bl.x) / (2 * size) };
  const y = { origin: (tl.y + tr.y) / 2, pitch: (bl.y - tl.y + br.y - tr.y) / (2 * size) };
  const tolerance = Math.max(1.5, 0.5 * Math.min(x.pitch, y.pitch));
  const skew = Math.max(Math.abs(tl.y - tr.y), Math.abs(bl.y - br.y), Math.abs(tl.x - bl.x), Math.abs(tr.x - br.x));
  if (!(x.pitch > 0 && y.pitch > 0)) return 'ZXing’s corners are not a square';
  if (skew > tolerance) return `the code's corners are not an axis-aligned rectangle (off by ${skew.toFixed(1)} px): rotated or in perspective`;
  return { x, y };
}

/** The grid fitted to the module edges, both axes, or a reason when the code is not a straight, square grid. */
function fitGrid(luma: LumaImage, model: GridModel, start: { x: AxisStart; y: AxisStart }): { x: AxisFit; y: AxisFit } | string {
  // Columns from the corners' rows, rows from the fitted columns, columns again from the fitted rows.
  const firstX = fitAxis(luma, model, start.x, start.y);
  const y = firstX && fitAxis(transpose(luma), transposeModel(model), start.y, firstX);
  const x = firstX && y && fitAxis(luma, model, firstX, y);
  if (!x || !y) return 'too few module edges could be measured';
  const { size } = model;
  for (const [axis, fit] of [['x', x], ['y', y]] as const) {
    if (fit.kept < 0.7 * fit.edges) return `only ${fit.kept} of ${fit.edges} module edges along ${axis} lie on a straight grid: the code is warped or in perspective`;
    if (fit.rms > MAX_RMS) return `the module edges along ${axis} are ${fit.rms.toFixed(2)} modules off a straight grid: the code is warped or in perspective`;
    if (fit.drift > MAX_DRIFT) return `the code is slightly rotated or in perspective (its corner modules lie ${fit.drift.toFixed(2)} modules off an axis-aligned grid)`;
  }
  if (Math.abs(x.pitch / y.pitch - 1) > MAX_ANISOTROPY) return `the modules are not square (${x.pitch.toFixed(2)} x ${y.pitch.toFixed(2)} px)`;
  return { x, y };
}

/**
 * The content re-encoded the ways common encoders segment it, each with the symbol's version, EC
 * level and mask; the one closest to the sampled symbol when EC could have corrected the
 * difference, else the sampled symbol itself.
 */
function chooseMatrix(read: ReadResult, info: SymbolInfo): { matrix: QrMatrix; source: 're-encoded' | 'sampled' } {
  const { version, level, mask, sampled } = info;
  const correctable = Math.floor(getTotalCodewordsCount(version, eccFrom(level)) / 2);
  let best: { matrix: QrMatrix; differing: number } | undefined;
  for (const segments of segmentChoices(read)) {
    let matrix: QrMatrix;
    try {
      matrix = matrixOfSymbol(QRCode.create(segments, { version, errorCorrectionLevel: level, maskPattern: mask as QRCode.QRCodeMaskPattern }), level);
    } catch {
      continue; // this segmentation does not fit the version: not how the code was made
    }
    const differing = differingCodewords(matrix, sampled);
    if (!best || differing < best.differing) best = { matrix, differing };
  }
  if (best && best.differing <= correctable) return { matrix: best.matrix, source: 're-encoded' };
  // Roles depend on the version only: take them from any symbol of that version.
  const roles = matrixOfSymbol(QRCode.create('0', { version, errorCorrectionLevel: level }), level);
  return { matrix: Object.freeze({ ...roles, dark: sampled }), source: 'sampled' };
}

const NUMERIC = /^[0-9]*$/;
const ALPHANUMERIC = /^[0-9A-Z $%*+\-./:]*$/;

/** The segmentations tried, as `qrcode` takes them: its optimal split, the tightest single mode, raw bytes. */
function segmentChoices(read: ReadResult): Array<string | QRCode.QRCodeSegment[]> {
  const { text, bytes } = read;
  const choices: Array<string | QRCode.QRCodeSegment[]> = [text];
  if (NUMERIC.test(text)) choices.push([{ data: text, mode: 'numeric' }]);
  else if (ALPHANUMERIC.test(text)) choices.push([{ data: text, mode: 'alphanumeric' }]);
  choices.push([{ data: Uint8Array.from(bytes), mode: 'byte' }]);
  return choices;
}

/**
 * Codewords (8 data-region modules in placement order; remainder bits left out) in which two
 * matrices of the same version differ.
 */
function differingCodewords(matrix: QrMatrix, other: Uint8Array): number {
  const { codeword } = codewordMap(matrix);
  const differing = new Set<number>();
  for (const [i, cw] of codeword.entries()) if (cw >= 0 && matrix.dark[i] !== other[i]) differing.add(cw);
  return differing.size;
}
