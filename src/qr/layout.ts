/**
 * Where the modules go on the canvas.
 *
 * Decision: the placed square { x, y, side } (what the API's qrX / qrY / qrRatio describe)
 * INCLUDES the quiet zone. The user's qrRatio is then the whole light area the code needs,
 * so a code placed flush with the canvas edge still has its quiet zone, and nothing is ever
 * drawn outside the square the API validated. Modules are a whole number of pixels (crisp
 * edges, equal modules, cheap tile blits); the code with its quiet zone is centred in the
 * square and the few leftover pixels are light too.
 *
 * Default quiet zone: 2 modules. ISO 18004 asks for 4, but every decoder we test against
 * (ZBar, OpenCV, ZXing, jsQR) reads 2 reliably, including against the mid-gray background of
 * control images, and art QR codes conventionally use 2: each extra module of margin makes
 * every module smaller, and module size is what keeps the art scannable.
 */

export interface Canvas {
  readonly width: number;
  readonly height: number;
}

/** A square in output pixels; x / y is its top-left corner. */
export interface Placement {
  readonly x: number;
  readonly y: number;
  readonly side: number;
}

export interface QrLayout {
  /** Pixels per module side. */
  readonly moduleSize: number;
  readonly quietZoneModules: number;
  /** Top-left pixel of module (0, 0). */
  readonly codeX: number;
  readonly codeY: number;
  /** Side of the code without its quiet zone: matrix size * moduleSize. */
  readonly codePixels: number;
  readonly placement: Placement;
}

export const DEFAULT_QUIET_ZONE_MODULES = 2;

export class QrLayoutError extends Error {
  override readonly name = 'QrLayoutError';
}

export function layoutQr(canvas: Canvas, placement: Placement, matrixSize: number, quietZoneModules: number = DEFAULT_QUIET_ZONE_MODULES): QrLayout {
  const { x, y, side } = placement;
  if (![x, y, side].every(Number.isInteger) || x < 0 || y < 0 || side <= 0 || x + side > canvas.width || y + side > canvas.height) {
    throw new RangeError(`the QR square ${side}px at (${x}, ${y}) must be whole pixels inside the ${canvas.width}x${canvas.height} canvas`);
  }
  if (!Number.isInteger(quietZoneModules) || quietZoneModules < 0) throw new RangeError(`quietZoneModules must be a non-negative integer, got ${quietZoneModules}`);
  const modules = matrixSize + 2 * quietZoneModules;
  const moduleSize = Math.floor(side / modules);
  if (moduleSize < 1) {
    throw new QrLayoutError(
      `the QR code needs ${modules} modules across (${matrixSize} + a ${quietZoneModules}-module quiet zone on each side) but only ${side} px are available: ` +
        'raise qrRatio or the resolution, or shorten qrContent',
    );
  }
  const offset = Math.floor((side - modules * moduleSize) / 2) + quietZoneModules * moduleSize;
  return Object.freeze({
    moduleSize,
    quietZoneModules,
    codeX: x + offset,
    codeY: y + offset,
    codePixels: matrixSize * moduleSize,
    placement: Object.freeze({ x, y, side }),
  });
}
