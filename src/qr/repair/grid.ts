/**
 * The code's module grid in an image: each cell's expected colour and role, the quiet-zone ring
 * included, where the cells lie, and the shape the requested pattern gave each cell.
 */
import type { RawImage } from '../../image/raw.ts';
import { ModuleRole, type QrMatrix } from '../encode.ts';
import type { QrLayout } from '../layout.ts';

/** The code as drawn in an image: its modules and where they are, in that image's pixels. */
export interface QrGeometry {
  readonly matrix: QrMatrix;
  readonly layout: QrLayout;
  /**
   * The control image the code was drawn as (1 channel, the image's size, dark 0, light 255):
   * repairs then follow the requested pattern's shapes. Optional; without it cores are plain
   * disks and squares.
   */
  readonly control?: RawImage;
}

/** Role of a quiet-zone module in the grid's role table (QR roles are 0..5). */
export const QUIET = 6;

/** Any role but data: finder, alignment, timing, format, version, and the quiet zone. */
export const isPattern = (role: number) => role !== ModuleRole.Data;

/** Module grid extended by the quiet zone, with the expected colour and role of each cell. */
export interface Grid {
  /** Cells per side: matrix size + 2 * quiet zone. */
  readonly side: number;
  readonly dark: Uint8Array;
  readonly role: Uint8Array;
  /** 1 for the cells of a finder's 3x3 centre. */
  readonly finderCentre: Uint8Array;
  /** Top-left pixel (image coordinates) of cell (0, 0). */
  readonly x0: number;
  readonly y0: number;
  readonly m: number;
}

export function gridOf(geometry: QrGeometry, image: RawImage): Grid {
  const { matrix, layout, control } = geometry;
  const m = layout.moduleSize;
  const q = layout.quietZoneModules;
  if (!Number.isInteger(m) || m < 1) throw new RangeError(`moduleSize must be a positive integer, got ${m}`);
  if (matrix.dark.length !== matrix.size * matrix.size || matrix.role.length !== matrix.dark.length) throw new RangeError('matrix arrays do not match its size');
  if (layout.codePixels !== matrix.size * m) throw new RangeError(`layout (${layout.codePixels} px) does not match a ${matrix.size}-module matrix at ${m} px`);
  if (control && (control.width !== image.width || control.height !== image.height || control.channels !== 1)) {
    throw new RangeError(`the control image must be 1-channel ${image.width}x${image.height}, got ${control.channels}-channel ${control.width}x${control.height}`);
  }
  const side = matrix.size + 2 * q;
  const x0 = layout.codeX - q * m;
  const y0 = layout.codeY - q * m;
  if (x0 < 0 || y0 < 0 || x0 + side * m > image.width || y0 + side * m > image.height) {
    throw new RangeError(`the code with its quiet zone (${side * m} px at ${x0}, ${y0}) is not inside the ${image.width}x${image.height} image`);
  }
  const dark = new Uint8Array(side * side);
  const role = new Uint8Array(side * side).fill(QUIET);
  for (let r = 0; r < matrix.size; r++) {
    for (let c = 0; c < matrix.size; c++) {
      const i = (r + q) * side + c + q;
      dark[i] = matrix.dark[r * matrix.size + c]!;
      role[i] = matrix.role[r * matrix.size + c]!;
    }
  }
  const finderCentre = new Uint8Array(side * side);
  for (const [r0, c0] of [[0, 0], [0, matrix.size - 7], [matrix.size - 7, 0]] as const) {
    for (let r = r0 + 2; r < r0 + 5; r++) for (let c = c0 + 2; c < c0 + 5; c++) finderCentre[(r + q) * side + c + q] = 1;
  }
  return { side, dark, role, finderCentre, x0, y0, m };
}

/**
 * The code sides (px, without quiet zone) a decoder may read the code at: decodeSides, but a
 * dense code is never read smaller than MIN_MODULE_PX per module (the capture family's near end
 * is lifted for it), so smaller decode sides count as that one.
}

/**
 * Per cell, per module pixel: how much the control image draws that pixel in the cell's own
 * colour (dark cells: 1 where the control is black; light cells: 1 where it is white).
 */
export function shapeOf(control: RawImage, grid: Grid): Float32Array {
  const { side, m, x0, y0, dark } = grid;
  const out = new Float32Array(side * side * m * m);
  for (let i = 0; i < side * side; i++) {
    const r = Math.floor(i / side);
    const c = i - r * side;
    const at = i * m * m;
    for (let y = 0; y < m; y++) {
      const row = (y0 + r * m + y) * control.width + x0 + c * m;
      for (let x = 0; x < m; x++) {
        const v = control.data[row + x]! / 255;
        out[at + y * m + x] = dark[i] ? 1 - v : v;
      }
    }
  }
  return out;
}
