// The qrcode package's own tables, so the QR layer does not re-derive what the encoder uses.
declare module 'qrcode/lib/core/alignment-pattern.js' {
  /** Centre (row, column) of every alignment pattern of a version. */
  export function getPositions(version: number): Array<[number, number]>;
}

declare module 'qrcode/lib/core/version.js' {
  export function getCapacity(version: number, errorCorrectionLevel: { bit: number }, mode: { id: string }): number;
}

declare module 'qrcode/lib/core/mode.js' {
  export const NUMERIC: { id: string };
  export const ALPHANUMERIC: { id: string };
  export const BYTE: { id: string };
}

declare module 'qrcode/lib/core/error-correction-level.js' {
  export function from(value: string, defaultValue?: { bit: number }): { bit: number };
}

declare module 'qrcode/lib/core/utils.js' {
  /** Codewords (data and EC) a symbol of this version holds. */
  export function getSymbolTotalCodewords(version: number): number;
}

declare module 'qrcode/lib/core/mask-pattern.js' {
  import type { BitMatrix } from 'qrcode';
  /** The standard's mask penalties of a finished symbol's modules: runs, 2x2 blocks, 1:1:3:1:1 runs, dark share. */
  export function getPenaltyN1(modules: BitMatrix): number;
  export function getPenaltyN2(modules: BitMatrix): number;
  export function getPenaltyN3(modules: BitMatrix): number;
  export function getPenaltyN4(modules: BitMatrix): number;
}
