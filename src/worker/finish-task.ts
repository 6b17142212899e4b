/**
 * What runs on the finishing pool's threads (finish-pool.ts): the CPU tail of an image, after
 * the inference thread hands it over. QR images get ensureScannable (the family verdict: scan
 * check and simulated phone captures; at the request's qrRepair level, the module repair) and a
 * PNG of the image delivered; other images (outpainting) just the PNG.
 */
import { encodePng } from '../image/decode.ts';
import { ensureScannable, type QrGeometry } from '../qr/guarantee.ts';
import type { QrRepairMode } from '../qr/repair-modes.ts';
import { fromWire, type WireImage } from './inference-protocol.ts';

/** How to check an image for its code. */
export interface ScanTask {
  readonly expected: string;
  readonly geometry: QrGeometry | undefined;
  readonly mode: QrRepairMode;
  readonly codeSide: number;
}

export interface FinishTask {
  readonly image: WireImage;
  /** Absent: encode only (outputs without a code). */
  readonly scan?: ScanTask;
}

export interface FinishResult {
  readonly png: ArrayBuffer;
  /** The family verdict on the delivered image, isScanables (absent without `scan`). */
  readonly scannable?: boolean;
  /** Share of the capture family's captures of the delivered image read, 0..1 (absent without `scan`). */
  readonly robustness?: number;
  readonly repaired: boolean;
  readonly changedModules: number;
  /** Scan check and repair together; repairMs of it in the repair passes (0 when none ran). */
  readonly scanMs: number;
  readonly repairMs: number;
  readonly pngMs: number;
}

export default async function finish(task: FinishTask): Promise<FinishResult> {
  const image = fromWire(task.image);
  const t0 = performance.now();
  if (!task.scan) {
    const png = await encodePng(image);
    return { png: ownBuffer(png), repaired: false, changedModules: 0, scanMs: 0, repairMs: 0, pngMs: performance.now() - t0 };
  }
  const { expected, geometry, mode, codeSide } = task.scan;
  // Without geometry (a client code that could not be located) the code is the letterboxed
  // square of side codeSide in the middle of the canvas: that is what the captures frame.
  const square = geometry ? undefined : centredSquare(image.width, image.height, codeSide);
  const checked = await ensureScannable(image, expected, geometry, mode, { codeSide, ...(square ? { square } : {}) });
  const scanMs = performance.now() - t0;
  const p0 = performance.now();
  const png = await encodePng(checked.image);
  return {
    png: ownBuffer(png),
    scannable: checked.scannable,
    robustness: checked.robustness,
    repaired: checked.repaired,
    changedModules: checked.changedModules,
    scanMs,
    repairMs: checked.repairMs,
    pngMs: performance.now() - p0,
  };
}

function centredSquare(width: number, height: number, side: number): { x: number; y: number; side: number } {
  const s = Math.min(side, width, height);
  return { x: Math.floor((width - s) / 2), y: Math.floor((height - s) / 2), side: s };
}

/** The PNG's bytes in an ArrayBuffer of their own (a Buffer may be a view into a shared pool). */
function ownBuffer(png: Buffer): ArrayBuffer {
  const own = new Uint8Array(png.length);
  own.set(png);
  return own.buffer;
}
