/**
 * Where a located client code goes on the canvas (v1-v3b): the client's image, scaled so each of
 * its modules becomes a whole number of canvas pixels and shifted so module edges land on pixel
 * edges, centred where the letterbox put it. The generated image's geometry is then a QrLayout like
 * our own renders' (integer moduleSize, whole-pixel origin), which the repair's module grid needs.
 */
import type { AreaTransform } from '../image/resample.ts';
import { DEFAULT_QUIET_ZONE_MODULES, layoutQr, type Canvas, type QrLayout } from './layout.ts';
import type { LocatedQr } from './locate.ts';

/** The quiet zone ISO 18004 asks for, which generators draw (qrcode's default margin). */
const STANDARD_MARGIN_MODULES = 4;

export interface ClientCodePlacement {
  /** Client image pixels -> canvas pixels. */
  readonly transform: AreaTransform;
  readonly layout: QrLayout;
}

/**
 * The placement of a client image of `client` size whose code is `located`, about as large as the
 * image fitted into a square of `fitSide` px (the module size is rounded to whole pixels), never
 * smaller than the code with a 4-module margin fitted there, and centred on the canvas, the code with a 2-module quiet zone kept inside it. A reason instead when
 * the code cannot get a whole pixel per module there.
 */
export function placeClientCode(located: LocatedQr, client: { width: number; height: number }, canvas: Canvas, fitSide: number): ClientCodePlacement | string {
  const n = located.matrix.size;
  const q = DEFAULT_QUIET_ZONE_MODULES;
  const fit = fitSide / Math.max(client.width, client.height);
  const pitch = (located.pitch.x + located.pitch.y) / 2;
  const largest = Math.floor(Math.min(canvas.width, canvas.height) / (n + 2 * q));
  // At least as large as the code with a standard 4-module margin fitted to the square: a code
  // in a wide margin (a screenshot, a page) would otherwise come out at a pixel or two a module,
  // a stamp no phone at arm's length reads. What lies beyond the canvas is cut off.
  const standardFit = Math.round(fitSide / (n + 2 * STANDARD_MARGIN_MODULES));
  const moduleSize = Math.min(largest, Math.max(1, Math.round(pitch * fit), standardFit));
  if (moduleSize < 1) return `a ${n}-module code with its quiet zone does not fit the ${canvas.width}x${canvas.height} canvas at 1 px per module`;
  const scaleX = moduleSize / located.pitch.x;
  const scaleY = moduleSize / located.pitch.y;
  // The code's top-left on a whole pixel, as near as can be to where centring the image puts it,
  // and never so near the canvas's edge that the quiet zone leaves the canvas.
  const codeAt = (canvasSide: number, clientSide: number, scale: number, origin: number) => {
    const centred = Math.round((canvasSide - clientSide * scale) / 2 + origin * scale);
    return Math.min(canvasSide - (n + q) * moduleSize, Math.max(q * moduleSize, centred));
  };
  const codeX = codeAt(canvas.width, client.width, scaleX, located.origin.x);
  const codeY = codeAt(canvas.height, client.height, scaleY, located.origin.y);
  const layout = layoutQr(canvas, { x: codeX - q * moduleSize, y: codeY - q * moduleSize, side: (n + 2 * q) * moduleSize }, n, q);
  return { transform: { scaleX, scaleY, offsetX: codeX - located.origin.x * scaleX, offsetY: codeY - located.origin.y * scaleY }, layout };
}
