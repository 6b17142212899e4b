/**
 * Decoders that nobody on this project wrote, used as referees in tests: ZBar (zbar-wasm)
 * and OpenCV's QRCodeDetector (opencv.js 5). Both run from node_modules, no network.
 * Each returns every text it decoded (empty when it found nothing).
 */
import { loadOpenCV } from '@opencvjs/web';
import { scanImageData, ZBarConfigType, ZBarScanner, ZBarSymbolType } from '@undecaf/zbar-wasm';
import type { RawImage } from '../../src/image/raw.ts';

export type RefereeName = 'zbar' | 'opencv';

function toRgba(image: RawImage): Uint8ClampedArray {
  const { data, width, height, channels } = image;
  if (channels === 4) return new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint8ClampedArray(width * height * 4);
  for (let i = 0, o = 0; i < data.length; i += channels, o += 4) {
    out[o] = data[i]!;
    out[o + 1] = data[i + (channels === 3 ? 1 : 0)]!;
    out[o + 2] = data[i + (channels === 3 ? 2 : 0)]!;
    out[o + 3] = 255;
  }
  return out;
}

/**
 * ZBar with zbar-wasm's default settings (every symbology, binary mode: the bytes read as UTF-8)
 * and a new scanner per image, as pyzbar's decode() runs it: a scanner kept across images
 * carries its RANSAC random state from one image to the next (src/qr/decoders.ts), and a
 * referee's read would depend on what it read before.
 */
export async function zbarDecode(image: RawImage): Promise<string[]> {
  const pixels = { data: toRgba(image), width: image.width, height: image.height, colorSpace: 'srgb' };
  const scanner = await ZBarScanner.create();
  scanner.setConfig(ZBarSymbolType.ZBAR_NONE, ZBarConfigType.ZBAR_CFG_BINARY, 1);
  try {
    const symbols = await scanImageData(pixels as unknown as Parameters<typeof scanImageData>[0], scanner);
    return symbols.filter((s) => s.typeName === 'ZBAR_QRCODE').map((s) => s.decode());
  } finally {
    scanner.destroy();
  }
}

type OpenCv = Awaited<ReturnType<typeof loadOpenCV>>;
let openCv: Promise<OpenCv> | undefined;

export async function opencvDecode(image: RawImage): Promise<string[]> {
  const cv = await (openCv ??= loadOpenCV());
  const pixels = { data: toRgba(image), width: image.width, height: image.height };
  const mat = cv.matFromImageData(pixels as unknown as Parameters<OpenCv['matFromImageData']>[0]);
  const points = new cv.Mat();
  const detector = new cv.QRCodeDetector();
  try {
    const text = String(detector.detectAndDecode(mat, points));
    return text === '' ? [] : [text];
  } finally {
    detector.delete();
    points.delete();
    mat.delete();
  }
}

export const referees: Readonly<Record<RefereeName, (image: RawImage) => Promise<string[]>>> = { zbar: zbarDecode, opencv: opencvDecode };
