/**
 * Java ZXing's QR reader, as its JavaScript port (@zxing/library, Apache-2.0) runs it. On its
 * own, without the other decoders' WebAssembly, because the encoder asks it too (readable-mask.ts).
 */
import { createRequire } from 'node:module';
import type { LumaImage } from '../image/luma.ts';

// Required as CommonJS: imported as an ES module (its package's "module" entry), it broke the
// finishing threads when run from source: tsx's loader did not take and every import in the
// thread failed ("Unknown file extension .ts"; the cause inside tsx not pinned down).
const zxingJava = createRequire(import.meta.url)('@zxing/library') as typeof import('@zxing/library');
const { BinaryBitmap, DecodeHintType, Exception: ZxingJavaException, HybridBinarizer, QRCodeReader, RGBLuminanceSource } = zxingJava;
// Bytes read as UTF-8, as ZBar's are (Java ZXing would guess the charset from the bytes).
const zxingJavaHints = new Map<typeof DecodeHintType.CHARACTER_SET, unknown>([[DecodeHintType.CHARACTER_SET, 'UTF-8']]);

/**
 * Java ZXing's reader, as its JavaScript port (@zxing/library, Apache-2.0) runs it: the hybrid
 * binarizer and the QR reader with their defaults. Its detector is not ZXing-C++'s: it fits the
 * sampling grid to the three finders and one alignment pattern, and finds finders by the
 * 1:1:3:1:1 runs of the binarized image alone. Phone apps built on Java ZXing read that way.
 */
export function zxingJavaDecode(luma: LumaImage): string[] {
  const source = new RGBLuminanceSource(new Uint8ClampedArray(luma.data.buffer, luma.data.byteOffset, luma.data.length), luma.width, luma.height);
  try {
    return [new QRCodeReader().decode(new BinaryBitmap(new HybridBinarizer(source)), zxingJavaHints).getText()];
  } catch (error) {
    if (error instanceof ZxingJavaException) return []; // not found, or not decodable
    throw error;
  }
}
