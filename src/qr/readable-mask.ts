/**
 * Which of the eight masks a symbol is drawn with. The QR standard ranks masks by a penalty for
 * patterns that confuse a reader, and the `qrcode` package takes the lowest; the penalty counts
 * 1:1:3:1:1 runs in rows and columns, but not the one that matters to ZXing's finder search.
 *
 * Java ZXing (its JavaScript port here; the library many phone apps run) looks for finders row
 * by row from the top and stops once three are each confirmed twice with like module sizes. A
 * run that passes its 1:1:3:1:1 tolerances across and down among the data modules, met before
 * the third true finder, is taken for a finder, and the read fails: on the plain code, and on
 * any art drawn over it. Measured on the scan bench's 118 jobs: one (version 8, `v5s`) had such
 * a false finder under the package's mask; the port missed its plain symbol upright and read 8
 * of its plain control image's 12 check captures, and no repair of the art can fix the matrix.
 *
 * So the mask is the encoder's lowest penalty among those under which the port reads the plain
 * symbol in all four orientations (a capture may be turned any way); when none is, the
 * encoder's own choice.
 */
import QRCode from 'qrcode';
import { getPenaltyN1, getPenaltyN2, getPenaltyN3, getPenaltyN4 } from 'qrcode/lib/core/mask-pattern.js';
import { rawImage } from '../image/raw.ts';
import type { LumaImage } from '../image/luma.ts';
import { zxingJavaDecode } from './zxing-java.ts';

/** The plain symbol is drawn this many pixels per module, with this many modules of quiet zone. */
const MODULE_PX = 4;
const QUIET_MODULES = 4;
const MASKS = [0, 1, 2, 3, 4, 5, 6, 7] as const;

/** What is read of a matrix here (encode.ts's QrMatrix has more). */
interface Modules {
  readonly size: number;
  /** size*size, row-major, 1 = dark. */
  readonly dark: Uint8Array;
}

/**
 * The symbol for `content` with the lowest-penalty mask Java ZXing reads plainly in every
 * orientation. `chosen` is the encoder's own symbol (its lowest penalty), tried first.
 */
export function readableSymbol<M extends Modules>(
  content: string,
  level: QRCode.QRCodeErrorCorrectionLevel,
  chosen: QRCode.QRCode,
  toMatrix: (code: QRCode.QRCode) => M,
): M {
  const first = toMatrix(chosen);
  if (readsInEveryOrientation(first, content)) return first;
  const others = MASKS.filter((mask) => mask !== chosen.maskPattern)
    .map((mask) => QRCode.create(content, { errorCorrectionLevel: level, version: chosen.version, maskPattern: mask as QRCode.QRCodeMaskPattern }))
    .map((code) => ({ code, penalty: penalty(code) }))
    .sort((a, b) => a.penalty - b.penalty);
  for (const { code } of others) {
    const matrix = toMatrix(code);
    if (readsInEveryOrientation(matrix, content)) return matrix;
  }
  return first;
}

/** The standard's mask penalty (N1-N4) of a finished symbol. */
function penalty(code: QRCode.QRCode): number {
  const { modules } = code;
  return getPenaltyN1(modules) + getPenaltyN2(modules) + getPenaltyN3(modules) + getPenaltyN4(modules);
}

/** Whether Java ZXing's port reads exactly `content` from the plain symbol turned each of four ways. */
export function readsInEveryOrientation(matrix: Modules, content: string): boolean {
  for (let turns = 0; turns < 4; turns++) {
    const read = zxingJavaDecode(plainSymbol(matrix, turns));
    if (read.length !== 1 || read[0] !== content) return false;
  }
  return true;
}

/** The symbol drawn black on white, turned a quarter `turns` times clockwise. */
function plainSymbol(matrix: Modules, turns: number): LumaImage {
  const { size, dark } = matrix;
  const side = (size + 2 * QUIET_MODULES) * MODULE_PX;
  const data = new Uint8Array(side * side).fill(255);
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      if (dark[r * size + c] !== 1) continue;
      // Module (r, c) after the turns, in the drawn grid.
      let [row, col] = [r, c];
      for (let t = 0; t < turns; t++) [row, col] = [col, size - 1 - row];
      const y0 = (row + QUIET_MODULES) * MODULE_PX;
      const x0 = (col + QUIET_MODULES) * MODULE_PX;
      for (let y = y0; y < y0 + MODULE_PX; y++) data.fill(0, y * side + x0, y * side + x0 + MODULE_PX);
    }
  }
  return rawImage(data, side, side, 1) as LumaImage;
}
