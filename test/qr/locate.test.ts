/**
 * locateQr on client-like code images: codes made by our encoder and by the `qrcode` package with
 * forced versions, EC levels, masks and content modes, drawn at whole and fractional module sizes
 * and offsets (antialiased), in colour, under a blotch or a logo. Each must come back with the
 * exact matrix and its modules where they were drawn; a rotated, tilted or photographed code must
 * be refused.
 */
import QRCode from 'qrcode';
import sharp, { type Sharp } from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/image/decode.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { encodeQr, matrixOfSymbol } from '../../src/qr/encode.ts';
import { locateQr, type LocatedQr } from '../../src/qr/locate.ts';
import { decodeAny } from '../../src/qr/scan.ts';
import { darkOf, drawCode, paint, type Drawing } from './locate-fixtures.ts';
import { simulateCapture } from './phone-capture.ts';

async function located(image: RawImage, text: string): Promise<LocatedQr> {
  const result = await locateQr(image, text);
  if (!result.located) throw new Error(`not located: ${result.reason}`);
  return result;
}

/** The modules are where they were drawn: origin to a few hundredths of a pixel, pitch to 0.1%. */
function expectDrawnAt(result: LocatedQr, drawing: Drawing): void {
  expect(Math.abs(result.origin.x - drawing.x), 'origin x').toBeLessThan(0.05);
  expect(Math.abs(result.origin.y - drawing.y), 'origin y').toBeLessThan(0.05);
  expect(Math.abs(result.pitch.x / drawing.pitch - 1), 'pitch x').toBeLessThan(0.001);
  expect(Math.abs(result.pitch.y / drawing.pitch - 1), 'pitch y').toBeLessThan(0.001);
}

interface Case {
  readonly text: string;
  readonly version: number;
  readonly level: 'L' | 'M' | 'Q' | 'H';
  readonly mask: QRCode.QRCodeMaskPattern;
  readonly drawing: Drawing;
}

// Versions 1-10, every EC level and mask, numeric / alphanumeric / byte / UTF-8 / mixed content,
// module sizes from 2 to 10 px, whole and fractional, in black on white and in colour.
const CASES: Case[] = [
  { text: '01234567890123', version: 1, level: 'L', mask: 0, drawing: { pitch: 2, x: 8, y: 8 } },
  { text: 'HELLO WORLD 2024 QR', version: 2, level: 'M', mask: 1, drawing: { pitch: 2.5, x: 10.3, y: 6.8 } },
  { text: 'https://example.com/a?b=1', version: 3, level: 'Q', mask: 2, drawing: { pitch: 3, x: 12, y: 15 } },
  { text: 'café ☕ crème brûlée', version: 4, level: 'H', mask: 3, drawing: { pitch: 3.7, x: 14.6, y: 11.2, dark: [30, 40, 140], light: [250, 240, 200] } },
  { text: 'ORDER 12345678901234567890 ok', version: 5, level: 'L', mask: 4, drawing: { pitch: 4, x: 16, y: 16 } },
  { text: 'https://shop.example.com/product/12345?ref=qr&utm=x', version: 6, level: 'M', mask: 5, drawing: { pitch: 5.3, x: 21.2, y: 19.9 } },
  { text: 'WIFI:T:WPA;S:qr-art;P:secret123;;', version: 7, level: 'Q', mask: 6, drawing: { pitch: 7.25, x: 29, y: 30.5, dark: [90, 20, 20], light: [255, 255, 255] } },
  { text: 'mailto:hello@example.com?subject=QR%20art', version: 8, level: 'H', mask: 7, drawing: { pitch: 6, x: 24, y: 24 } },
  { text: '31415926535897932384626433832795028841971693993751', version: 9, level: 'L', mask: 0, drawing: { pitch: 8, x: 33.5, y: 32 } },
  { text: 'tel:+15551234567 / sms:+15557654321 / geo:52.52,13.40', version: 10, level: 'M', mask: 1, drawing: { pitch: 10, x: 40, y: 40.4 } },
];

describe('locateQr: codes made by the qrcode package with forced options', () => {
  it.each(CASES)('version $version, EC $level, mask $mask, $drawing.pitch px modules: the exact matrix where it was drawn', async ({ text, version, level, mask, drawing }) => {
    const code = QRCode.create(text, { version, errorCorrectionLevel: level, maskPattern: mask });
    const truth = darkOf(code);
    const result = await located(drawCode(truth, code.modules.size, drawing), text);
    expect(result).toMatchObject({ text, matrixSource: 're-encoded', misdrawnModules: 0, mask });
    expect(result.matrix).toMatchObject({ version, errorCorrectionLevel: level, size: code.modules.size });
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(truth));
    expectDrawnAt(result, drawing);
  });

  it('a PNG as qrcode.toBuffer writes it (whole-pixel scale, 4-module margin) is located at its margin', async () => {
    const text = 'https://example.com/png?from=qrcode';
    const png = await QRCode.toBuffer(text, { errorCorrectionLevel: 'Q', scale: 6, margin: 4 });
    const image = await decodeImage(png, { maxPixels: 1e7, channels: 3 });
    const result = await located(image, text);
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(darkOf(QRCode.create(text, { errorCorrectionLevel: 'Q' }))));
    expectDrawnAt(result, { pitch: 6, x: 24, y: 24 });
  });
});

describe('locateQr: codes made by our encoder', () => {
  it.each([
    { text: 'https://qr-art.example/p/8f14e45f', level: 'H' as const, drawing: { pitch: 9, x: 18, y: 18 } },
    { text: 'https://qr-art.example/p/8f14e45f?campaign=spring', level: 'M' as const, drawing: { pitch: 4.4, x: 7.7, y: 30.1, width: 260, height: 300 } },
  ])('$level at $drawing.pitch px: the matrix encodeQr made', async ({ text, level, drawing }) => {
    const matrix = encodeQr(text, level);
    const result = await located(drawCode(matrix.dark, matrix.size, drawing), text);
    expect(result.matrixSource).toBe('re-encoded');
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(matrix.dark));
    expect(Array.from(result.matrix.role)).toEqual(Array.from(matrix.role));
    expectDrawnAt(result, drawing);
  });
});

describe('locateQr: damaged and foreign codes', () => {
  const text = 'https://example.com/brought-by-the-client';
  const code = QRCode.create(text, { version: 5, errorCorrectionLevel: 'H', maskPattern: 2 });
  const n = code.modules.size;
  const truth = darkOf(code);
  const drawing = { pitch: 6.5, x: 26, y: 26 };
  const centre = (module: number, at: number) => at + (module + 0.5) * drawing.pitch;

  it('a colour blotch over a few modules: the true matrix (re-encoded), the blotched modules counted as misdrawn', async () => {
    const image = paint(drawCode(truth, n, drawing), { cx: centre(25, drawing.x), cy: centre(15, drawing.y), radius: 1.7 * drawing.pitch }, [230, 60, 40]);
    const result = await located(image, text);
    expect(result.matrixSource).toBe('re-encoded');
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(truth));
    expect(result.misdrawnModules).toBeGreaterThan(0);
    expectDrawnAt(result, drawing);
  });

  it('a centred logo (a dark glyph on a white plate over 7x7 modules): the true matrix, the modules where they were drawn', async () => {
    const image = drawCode(truth, n, drawing);
    const c = n / 2;
    paint(image, { cx: drawing.x + c * drawing.pitch, cy: drawing.y + c * drawing.pitch, radius: 3.5 * drawing.pitch, square: true }, [255, 255, 255]);
    paint(image, { cx: drawing.x + c * drawing.pitch, cy: drawing.y + c * drawing.pitch, radius: 2 * drawing.pitch }, [20, 20, 20]);
    const result = await located(image, text);
    expect(result.matrixSource).toBe('re-encoded');
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(truth));
    expect(result.misdrawnModules).toBeGreaterThan(10);
    expectDrawnAt(result, drawing);
  });

  it('an encoder whose segments ours never makes: the matrix as sampled, and says so', async () => {
    // Two byte segments and an alphanumeric one where any encoder would write one segment.
    const bytes = (text: string) => new TextEncoder().encode(text);
    const segments: QRCode.QRCodeSegment[] = [{ data: bytes('HELLO '), mode: 'byte' }, { data: bytes('CLIENT'), mode: 'byte' }, { data: '42', mode: 'alphanumeric' }];
    const foreign = QRCode.create(segments, { version: 3, errorCorrectionLevel: 'M', maskPattern: 5 });
    const foreignDark = darkOf(foreign);
    const result = await located(drawCode(foreignDark, foreign.modules.size, { pitch: 5, x: 20, y: 20 }), 'HELLO CLIENT42');
    expect(result.matrixSource).toBe('sampled');
    expect(result.misdrawnModules).toBe(0);
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(foreignDark));
    // The roles still follow the version: finders, timing, format as in any version-3 symbol.
    expect(Array.from(result.matrix.role)).toEqual(Array.from(matrixOfSymbol(QRCode.create('0', { version: 3 }), 'M').role));
  });

  it('a code that ISO-8859-1 bytes were written into (no ECI): re-encoded from the raw bytes, whatever text they read as', async () => {
    const bytes = Uint8Array.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x6e, 0xb0, 0x31]); // "café n°1" in Latin-1
    const latin = QRCode.create([{ data: bytes, mode: 'byte' }], { version: 2, errorCorrectionLevel: 'Q', maskPattern: 6 });
    const image = drawCode(darkOf(latin), latin.modules.size, { pitch: 5, x: 20, y: 20 });
    const read = await decodeAny(image);
    const result = await located(image, read!.text);
    expect(result.matrixSource).toBe('re-encoded');
    expect(Array.from(result.matrix.dark)).toEqual(Array.from(darkOf(latin)));
  });

  it('refuses when the image reads as another text than the one expected', async () => {
    expect(await locateQr(drawCode(truth, n, drawing), 'something else')).toMatchObject({ located: false, reason: expect.stringMatching(/different text/) });
  });
});

describe('locateQr: refuses codes that are not axis-aligned and undistorted', () => {
  const text = 'https://example.com/photo';
  const code = QRCode.create(text, { version: 3, errorCorrectionLevel: 'M' });
  const flat = drawCode(darkOf(code), code.modules.size, { pitch: 8, x: 40, y: 40 });
  const rgb = (image: RawImage) => ({ raw: { width: image.width, height: image.height, channels: image.channels } });
  const fromSharp = async (pipeline: Sharp) => {
    const { data, info } = await pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });
    return rawImage(new Uint8Array(data), info.width, info.height, 3);
  };

  it.each([8, 3, 90])('rotated by %i°', async (degrees) => {
    const rotated = await fromSharp(sharp(flat.data, rgb(flat)).rotate(degrees, { background: '#ffffff' }));
    const result = await locateQr(rotated, text);
    expect(result).toMatchObject({ located: false, reason: expect.stringMatching(/rotated/) });
  });

  it('a phone photo of it (rotation, perspective, blur, noise, JPEG)', async () => {
    const params = { codeSide: 300, rotationDeg: 2.5, tilt: 0.03, blurSigma: 0.8, contrast: 0.75, brightness: 5, noise: 2, jpegQuality: 70 };
    const photo = await simulateCapture(flat, { x: 24, y: 24, side: flat.width - 48 }, params, 7);
    const result = await locateQr(photo.image, text);
    expect(result.located).toBe(false);
  });

  it('perspective alone (no rotation)', async () => {
    const params = { codeSide: 300, rotationDeg: 0, tilt: 0.04, blurSigma: 0.3, contrast: 1, brightness: 0, noise: 0, jpegQuality: 95 };
    const photo = await simulateCapture(flat, { x: 24, y: 24, side: flat.width - 48 }, params, 3);
    const result = await locateQr(photo.image, text);
    expect(result).toMatchObject({ located: false, reason: expect.stringMatching(/perspective|rotated/) });
  });

  it('a wavy warp that leaves the corners where they were (the middle rows shifted by half a module)', async () => {
    // Each row of the code moved sideways by 4 px * sin(pi * row position): 0 at the top and bottom.
    const side = code.modules.size * 8;
    const wavy = new Uint8Array(flat.data.length);
    for (let y = 0; y < flat.height; y++) {
      const t = Math.min(1, Math.max(0, (y - 40) / side));
      const shift = 4 * Math.sin(Math.PI * t);
      for (let x = 0; x < flat.width; x++) {
        const sx = Math.min(flat.width - 1, Math.max(0, x - shift));
        const x0 = Math.floor(sx);
        const x1 = Math.min(flat.width - 1, x0 + 1);
        const f = sx - x0;
        for (let c = 0; c < 3; c++) wavy[(y * flat.width + x) * 3 + c] = Math.round(flat.data[(y * flat.width + x0) * 3 + c]! * (1 - f) + flat.data[(y * flat.width + x1) * 3 + c]! * f);
      }
    }
    const result = await locateQr(rawImage(wavy, flat.width, flat.height, 3), text);
    expect(result).toMatchObject({ located: false, reason: expect.stringMatching(/warped|perspective/) });
  });

  it('an image in which ZXing finds no code', async () => {
    const blank = rawImage(new Uint8Array(120 * 120 * 3).fill(200), 120, 120, 3);
    expect(await locateQr(blank, text)).toMatchObject({ located: false, reason: expect.stringMatching(/no code/) });
  });
});
