/**
 * Content -> QR module matrix. The `qrcode` package does the encoding (optimal segments,
 * UTF-8 byte mode for anything outside numeric/alphanumeric, best mask, unless Java ZXing
 * misreads the plain symbol under it: readable-mask.ts); this file adds what
 * the renderer needs on top: which function pattern every module belongs to, so shaped
 * patterns can keep finders, alignment and timing solid while styling the data.
 */
import QRCode from 'qrcode';
import { getPositions } from 'qrcode/lib/core/alignment-pattern.js';
import { from as eccFrom } from 'qrcode/lib/core/error-correction-level.js';
import { ALPHANUMERIC, BYTE, NUMERIC } from 'qrcode/lib/core/mode.js';
import { getCapacity } from 'qrcode/lib/core/version.js';
import { readableSymbol } from './readable-mask.ts';

export type ErrorCorrectionLevel = 'L' | 'M' | 'Q' | 'H';
export const ERROR_CORRECTION_LEVELS: readonly ErrorCorrectionLevel[] = ['L', 'M', 'Q', 'H'];

/** What a module is for. Values are stored in QrMatrix.role. */
export const ModuleRole = {
  Data: 0,
  /** The 7x7 finder pattern and its one-module light separator. */
  Finder: 1,
  Alignment: 2,
  Timing: 3,
  /** Format information, including the always-dark module beside the bottom-left finder. */
  Format: 4,
  /** Version information (version 7 and up). */
  Version: 5,
} as const;
export type ModuleRole = (typeof ModuleRole)[keyof typeof ModuleRole];

export interface QrMatrix {
  /** Modules per side (21 for version 1 ... 177 for version 40). */
  readonly size: number;
  readonly version: number;
  readonly errorCorrectionLevel: ErrorCorrectionLevel;
  /** size*size, row-major, 1 = dark. */
  readonly dark: Uint8Array;
  /** size*size, row-major, a ModuleRole per module. */
  readonly role: Uint8Array;
}

/** Largest version-40 capacity per mode at a level, straight from the encoder's tables. */
export function maxCapacity(level: ErrorCorrectionLevel): { numeric: number; alphanumeric: number; byte: number } {
  const ecl = eccFrom(level);
  return {
    numeric: getCapacity(40, ecl, NUMERIC),
    alphanumeric: getCapacity(40, ecl, ALPHANUMERIC),
    byte: getCapacity(40, ecl, BYTE),
  };
}

export class QrContentTooLongError extends Error {
  override readonly name = 'QrContentTooLongError';
  constructor(
    readonly bytes: number,
    readonly errorCorrectionLevel: ErrorCorrectionLevel,
    readonly maxBytes: number,
  ) {
    const max = maxCapacity(errorCorrectionLevel);
    super(
      `the QR content is ${bytes} bytes (UTF-8) and does not fit in a QR code at error-correction level ${errorCorrectionLevel}: ` +
        `the largest code (version 40) holds at most ${maxBytes} bytes at that level ` +
        `(${max.alphanumeric} characters if only digits, A-Z, space and $%*+-./:, or ${max.numeric} if only digits)`,
    );
  }
}

const utf8 = new TextEncoder();

export function encodeQr(content: string, level: ErrorCorrectionLevel = 'H'): QrMatrix {
  return readableSymbol(content, level, encoderSymbol(content, level), (symbol) => matrixOfSymbol(symbol, level));
}

/**
 * Modules per side of content's code: what encodeQr's matrix measures, without choosing its mask
 * (the size does not depend on it). For request validation, which needs only the size.
 */
export function encodedSize(content: string, level: ErrorCorrectionLevel = 'H'): number {
  return encoderSymbol(content, level).modules.size;
}

/** The `qrcode` package's own symbol (its version, segments and mask), with our errors. */
function encoderSymbol(content: string, level: ErrorCorrectionLevel): QRCode.QRCode {
  if (typeof content !== 'string' || content.length === 0) throw new RangeError('the QR content must be a non-empty string');
  if (!ERROR_CORRECTION_LEVELS.includes(level)) throw new RangeError(`unknown error-correction level ${String(level)}`);
  try {
    return QRCode.create(content, { errorCorrectionLevel: level });
  } catch (error) {
    // qrcode says only "too big"; the caller needs sizes to tell the user what to cut.
    if (error instanceof Error && /too big/i.test(error.message)) {
      throw new QrContentTooLongError(utf8.encode(content).length, level, maxCapacity(level).byte);
    }
    throw error;
  }
}

/**
 * A symbol made by the `qrcode` package as our matrix. encodeQr's symbols go through it, and so do
 * symbols made with a forced version, mask or segments (locate.ts re-encodes a client's code as
 * its own encoder made it).
 */
export function matrixOfSymbol(code: QRCode.QRCode, level: ErrorCorrectionLevel): QrMatrix {
  const { size } = code.modules;
  const dark = Uint8Array.from(code.modules.data as ArrayLike<number>, (v) => (v ? 1 : 0));
  return Object.freeze({ size, version: code.version, errorCorrectionLevel: level, dark, role: moduleRoles(size, code.version, code.modules.reservedBit as ArrayLike<number>) });
}

/** Centre (row, column) of each alignment pattern of a version (none for version 1). */
export function alignmentCentres(version: number): ReadonlyArray<readonly [number, number]> {
  return getPositions(version);
}

/** Classifies qrcode's reserved (function) modules by position. */
function moduleRoles(size: number, version: number, reserved: ArrayLike<number>): Uint8Array {
  const role = new Uint8Array(size * size);
  const alignment = new Uint8Array(size * size);
  for (const [row, col] of alignmentCentres(version)) {
    for (let r = row - 2; r <= row + 2; r++) alignment.fill(1, r * size + col - 2, r * size + col + 3);
  }
  const far = size - 8;
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      const i = r * size + c;
      if (!reserved[i]) continue;
      if ((r < 8 && c < 8) || (r < 8 && c >= far) || (r >= far && c < 8)) role[i] = ModuleRole.Finder;
      else if (alignment[i]) role[i] = ModuleRole.Alignment;
      else if (r === 6 || c === 6) role[i] = ModuleRole.Timing;
      else if (version >= 7 && ((r < 6 && c >= size - 11 && c < far) || (c < 6 && r >= size - 11 && r < far))) role[i] = ModuleRole.Version;
      else role[i] = ModuleRole.Format;
    }
  }
  return role;
}
