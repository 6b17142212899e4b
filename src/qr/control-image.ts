/**
 * The control image a QR ControlNet is conditioned on (and the plain code the worker
 * renders today): the content's code in a pattern style, inside its light quiet zone, at
 * the requested place on a canvas of the output size.
 */
import { rawImage, type RawImage } from '../image/raw.ts';
import { encodeQr, type ErrorCorrectionLevel, type QrMatrix } from './encode.ts';
import { DEFAULT_QUIET_ZONE_MODULES, layoutQr, type Canvas, type Placement, type QrLayout } from './layout.ts';
import { patternStyle, type QrCodePattern } from './patterns.ts';
import { drawQr } from './raster.ts';

/** gray: #808080 outside the quiet zone, what QR Code Monster v2 expects; white: #FFFFFF. */
export type ControlBackground = 'gray' | 'white';

export const BACKGROUND_LUMA: Readonly<Record<ControlBackground, number>> = Object.freeze({ gray: 0x80, white: 0xff });
export const DARK_LUMA = 0;
export const LIGHT_LUMA = 255;

export interface ControlImageOptions {
  readonly content: string;
  readonly pattern: QrCodePattern;
  readonly canvas: Canvas;
  readonly placement: Placement;
  readonly background: ControlBackground;
  readonly errorCorrectionLevel?: ErrorCorrectionLevel;
  readonly quietZoneModules?: number;
}

export interface ControlImage {
  /** 1 channel (luminance): dark modules 0, modules' light and quiet zone 255. */
  readonly image: RawImage;
  readonly layout: QrLayout;
  readonly matrix: QrMatrix;
}

export function renderControlImage(options: ControlImageOptions): ControlImage {
  const { canvas, placement } = options;
  const matrix = encodeQr(options.content, options.errorCorrectionLevel ?? 'H');
  const layout = layoutQr(canvas, placement, matrix.size, options.quietZoneModules ?? DEFAULT_QUIET_ZONE_MODULES);
  const { width, height } = canvas;
  const data = new Uint8Array(width * height);
  const background = BACKGROUND_LUMA[options.background];
  if (background === undefined) throw new RangeError(`unknown background ${String(options.background)}`);
  data.fill(background);
  if (background !== LIGHT_LUMA) {
    // The whole placed square is light: quiet zone plus the leftover of the integer module size.
    for (let y = placement.y, o = y * width + placement.x; y < placement.y + placement.side; y++, o += width) data.fill(LIGHT_LUMA, o, o + placement.side);
  }
  const target = { data, width, height };
  drawQr(target, matrix, layout, patternStyle(options.pattern));
  return { image: rawImage(data, width, height, 1), layout, matrix };
}

/**
 * The square the API places the code in: side = round(qrRatio * short side), centred
 * (floor) on each axis where qrX / qrY are absent. Bounds are the API's to check.
 */
export function placementFor(canvas: Canvas, qrRatio: number, qrX?: number, qrY?: number): Placement {
  const side = Math.round(qrRatio * Math.min(canvas.width, canvas.height));
  return {
    x: qrX ?? Math.floor((canvas.width - side) / 2),
    y: qrY ?? Math.floor((canvas.height - side) / 2),
    side,
  };
}
