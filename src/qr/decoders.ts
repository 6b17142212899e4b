/**
 * The QR decoders we run, behind one shape: a luminance image in, every text read out.
 * ZXing-C++ (zxing-wasm, its .wasm read from node_modules, never a CDN), in the variants a
 * ladder rung asks for (binarizer, denoise, ...), jsQR, and ZBar (@undecaf/zbar-wasm, LGPL-2.1+:
 * an unmodified npm package whose .wasm is loaded as its own module; docs/scan-repair.md says
 * why that licence is acceptable).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import jsQRModule from 'jsqr';
import { scanGrayBuffer, ZBarConfigType, ZBarScanner, ZBarSymbolType } from '@undecaf/zbar-wasm';
import { prepareZXingModule, readBarcodes, type Binarizer, type ReaderOptions } from 'zxing-wasm/reader';
import { lumaToRgba, type LumaImage } from '../image/luma.ts';
import { meanWindowThreshold } from './binarize.ts';
import { zxingJavaDecode } from './zxing-java.ts';

export type DecoderName = 'zxing' | 'jsqr' | 'zbar' | 'zxingjava';
export type { Binarizer } from 'zxing-wasm/reader';

/**
 * How ZXing reads an image. `binarizer`: one of ZXing's (default LocalAverage, its hybrid
 * local-mean one) or 'MeanWindow', our own mean-window threshold (binarize.ts) handed to ZXing
 * already binarized. `denoise`: ZXing's morphological closing pass when the first read fails.
 * `downscale`: ZXing's own downscaled retries (factor 3 from 500 px).
 */
export type ScanBinarizer = Binarizer | 'MeanWindow';
export interface ZxingVariant {
  readonly binarizer?: ScanBinarizer;
  readonly denoise?: boolean;
  readonly downscale?: boolean;
  /** MeanWindow only: the window's side in px (odd) and the bias below its mean (default 25 and 10). */
  readonly window?: number;
  readonly bias?: number;
}

// QR only (Model 2, the QR code: in zxing-cpp 3 'QRCode' also names Micro QR and rMQR, which
// ZBar, Java ZXing and most phone readers do not read); we do our own downscaling and never look for inverted codes (a light-on-dark
// code is not what we render, and counting it would flatter the check). Our encoder writes
// UTF-8 bytes without an ECI, hence the UTF-8 fallback; Plain text = just the transcoded bytes.
const readerOptions: ReaderOptions = {
  formats: ['QRCodeModel2'],
  tryHarder: true,
  tryRotate: false, // QR detection is rotation invariant; the rotations are for linear codes
  tryInvert: false,
  tryDownscale: false,
  tryDenoise: false,
  isPure: false,
  maxNumberOfSymbols: 4, // more than one, so a second different code in the image is noticed
  textMode: 'Plain',
  characterSet: 'UTF8',
};

const variantOptions = new Map<string, ReaderOptions>();

function optionsFor({ binarizer = 'LocalAverage', denoise = false, downscale = false }: ZxingVariant): ReaderOptions {
  const key = `${binarizer}/${denoise}/${downscale}`;
  let options = variantOptions.get(key);
  if (!options) {
    options = {
      ...readerOptions,
      binarizer: binarizer === 'MeanWindow' ? 'BoolCast' : binarizer,
      tryDenoise: denoise,
      tryDownscale: downscale,
    };
    variantOptions.set(key, options);
  }
  return options;
}

let zxingReady: Promise<unknown> | undefined;

/**
 * The zxing module, instantiated once per process from the package's own .wasm file. Await it
 * before calling zxing-wasm's readBarcodes directly (locate.ts reads positions and symbols).
 */
export function zxingModule(): Promise<unknown> {
  zxingReady ??= (async () => {
    const require = createRequire(import.meta.url);
    const bytes = readFileSync(require.resolve('zxing-wasm/reader/zxing_reader.wasm'));
    const wasmBinary = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    return prepareZXingModule({ overrides: { wasmBinary }, fireImmediately: true });
  })().catch((error: unknown) => {
    zxingReady = undefined; // let a later call retry rather than fail forever
    throw error;
  });
  return zxingReady;
}

/**
 * Texts of the valid QR codes ZXing finds in the image (empty when none). The luminance
 * goes in as a binary PGM file, which the reader's image loader (stb_image) takes as is:
 * given RGBA, zxing-wasm would only turn it back into luminance in JS, and that round trip
 * measured ~40% of the decode time of a 768x768 image.
 */
export async function zxingDecode(luma: LumaImage, variant: ZxingVariant = {}): Promise<string[]> {
  await zxingModule();
  const input = variant.binarizer === 'MeanWindow' ? meanWindowThreshold(luma, variant.window, variant.bias) : luma;
  const results = await readBarcodes(pgm(input), optionsFor(variant));
  return results.filter((r) => r.isValid).map((r) => r.text);
}

/** A luminance image as a binary PGM file: what readBarcodes takes without a JS colour pass. */
export function pgm(luma: LumaImage): Uint8Array {
  const header = new TextEncoder().encode(`P5\n${luma.width} ${luma.height}\n255\n`);
  const file = new Uint8Array(header.length + luma.data.length);
  file.set(header);
  file.set(luma.data, header.length);
  return file;
}

interface JsQrChunk { type: string }
interface JsQrCode { data: string; binaryData: number[]; chunks: JsQrChunk[] }
type JsQr = (data: Uint8ClampedArray, width: number, height: number, options?: { inversionAttempts?: 'dontInvert' }) => JsQrCode | null;
// jsqr is a CommonJS bundle whose module.exports also carries `default`.
const jsQR = ((jsQRModule as unknown as { default?: JsQr }).default ?? jsQRModule) as unknown as JsQr;
const utf8 = new TextDecoder('utf-8');

/**
 * jsQR's text (empty or one entry). jsQR turns each byte segment into text with
 * decodeURIComponent and silently drops a segment that is not valid UTF-8; so the text is
 * rebuilt from the raw bytes with the same UTF-8 fallback ZXing gets (numeric and
 * alphanumeric bytes are ASCII). Kanji or ECI segments keep jsQR's own text.
 */
export function jsqrDecode(luma: LumaImage): string[] {
  const code = jsQR(lumaToRgba(luma), luma.width, luma.height, { inversionAttempts: 'dontInvert' });
  if (!code) return [];
  const plain = code.chunks.every((c) => c.type === 'byte' || c.type === 'numeric' || c.type === 'alphanumeric');
  return [plain ? utf8.decode(Uint8Array.from(code.binaryData)) : code.data];
}

/**
 * A new ZBar scanner that looks for QR codes only (the default one tries every linear symbology
 * too), in binary mode, as zbar-wasm's default scanner is: ZBar hands back the code's bytes and
 * they are read as UTF-8 (what our encoder and nearly every other writes); left to itself ZBar
 * guesses a charset from the bytes and read "Crème brûlée" as "CrÃ¨me brÃ»lÃ©e", which the
 * verdict took for another content.
 *
 * New for every image: ZBar's QR reader fits finder patterns by RANSAC with a random generator
 * seeded once, when the scanner is made, and never reseeded. A scanner kept across images read a
 * marginal capture in 6 of 8 tries in a row, so a verdict depended on every image decoded before
 * it. A new scanner starts every image from the same seed (as pyzbar's decode() does), at no
 * measurable cost (~1.2 ms a 300 px image either way).
 */
async function qrOnlyScanner(): Promise<ZBarScanner> {
  const scanner = await ZBarScanner.create();
  scanner.setConfig(ZBarSymbolType.ZBAR_NONE, ZBarConfigType.ZBAR_CFG_ENABLE, 0);
  scanner.setConfig(ZBarSymbolType.ZBAR_QRCODE, ZBarConfigType.ZBAR_CFG_ENABLE, 1);
  scanner.setConfig(ZBarSymbolType.ZBAR_NONE, ZBarConfigType.ZBAR_CFG_BINARY, 1);
  return scanner;
}

/**
 * ZBar's texts (ZBar's C decoder, compiled to wasm by @undecaf/zbar-wasm; the .wasm is read from
 * node_modules). ZBar reads luminance: the image goes in as a grey buffer, copied because ZBar's
 * wrapper takes an ArrayBuffer of exactly width x height bytes. Texts: zbarText.
 */
export async function zbarDecode(luma: LumaImage): Promise<string[]> {
  const gray = luma.data.slice().buffer as ArrayBuffer;
  const scanner = await qrOnlyScanner();
  try {
    const symbols = await scanGrayBuffer(gray, luma.width, luma.height, scanner);
    return symbols.filter((s) => s.type === ZBarSymbolType.ZBAR_QRCODE).map((s) => zbarText(new Uint8Array(s.data.buffer, s.data.byteOffset, s.data.byteLength)));
  } finally {
    scanner.destroy();
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const SHIFT_JIS = new TextDecoder('shift_jis', { fatal: true });
const UTF8_REPLACING = new TextDecoder('utf-8');

/**
 * The text of ZBar's bytes. In binary mode ZBar hands the segments' bytes over as they are: UTF-8
 * for what our encoder and nearly every other writes, but Shift JIS for a Kanji-mode segment
 * (Japanese generators' codes), which ZXing and phones turn into text. Bytes that are not UTF-8
 * and are Shift JIS are read so; anything else as UTF-8 with replacement characters, as before.
 */
export function zbarText(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    try {
      return SHIFT_JIS.decode(bytes);
    } catch {
      return UTF8_REPLACING.decode(bytes);
    }
  }
}

export const decoders: Readonly<Record<DecoderName, (luma: LumaImage, variant?: ZxingVariant) => Promise<string[]> | string[]>> = {
  zxing: zxingDecode,
  jsqr: jsqrDecode,
  zbar: zbarDecode,
  zxingjava: zxingJavaDecode,
};
