import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import QRCode from 'qrcode';
import { prepareZXingModule, writeBarcode } from 'zxing-wasm/writer';
import { decodeImage } from '../../src/image/decode.ts';
import { describe, expect, it } from 'vitest';
import { toLuma } from '../../src/image/luma.ts';
import { rawImage, type Channels, type RawImage } from '../../src/image/raw.ts';
import { jsqrDecode, zxingDecode } from '../../src/qr/decoders.ts';
import { decodeAny, runLadder, SCAN_LADDER, scanCheck } from '../../src/qr/scan.ts';

interface Placement {
  content: string;
  x: number;
  y: number;
  side: number;
}

/** A light canvas with codes (qrcode package, level H) drawn at the given places, dark 0 / light 255. */
function canvas(width: number, height: number, codes: Placement[], channels: Channels = 3, transparentLight = false): RawImage {
  const data = new Uint8Array(width * height * channels);
  for (let i = 0; i < width * height; i++) paint(data, i, channels, false, transparentLight);
  for (const { content, x, y, side } of codes) {
    const qr = QRCode.create(content, { errorCorrectionLevel: 'H' });
    const n = qr.modules.size;
    for (let j = 0; j < side; j++) {
      for (let i = 0; i < side; i++) {
        const dark = qr.modules.data[Math.floor((j * n) / side) * n + Math.floor((i * n) / side)] === 1;
        paint(data, (y + j) * width + x + i, channels, dark, transparentLight);
      }
    }
  }
  return rawImage(data, width, height, channels);
}

function paint(data: Uint8Array, pixel: number, channels: Channels, dark: boolean, transparentLight: boolean): void {
  const o = pixel * channels;
  if (channels === 4 && transparentLight) {
    // Light = fully transparent black, the way many QR PNGs store it.
    data.set(dark ? [0, 0, 0, 255] : [0, 0, 0, 0], o);
    return;
  }
  data.fill(dark ? 0 : 255, o, o + Math.min(channels, 3));
  if (channels === 4) data[o + 3] = 255;
}

function noise(width: number, height: number, seed: number): RawImage {
  let s = seed >>> 0;
  const data = new Uint8Array(width * height);
  for (let i = 0; i < data.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s >>> 24;
  }
  return rawImage(data, width, height, 1);
}

const URL = 'https://example.com/p/42?ref=qr';

describe('scanCheck', () => {
  it('passes a plain code at the first rung and reports how it was read', async () => {
    const image = canvas(768, 768, [{ content: URL, x: 77, y: 77, side: 614 }]);
    expect(await scanCheck(image, URL, { codeSide: 614 })).toEqual({ scannable: true, decoder: 'zxing', scale: 1.54, blurred: false, attempts: 1 });
    // Without the hint the code is taken to span the short side.
    expect(await scanCheck(image, URL)).toMatchObject({ scannable: true, decoder: 'zxing', scale: 1.92, attempts: 1 });
  });

  it('fails an image that encodes another content, and says what it read', async () => {
    const image = canvas(600, 600, [{ content: 'https://example.com/other', x: 60, y: 60, side: 480 }]);
    expect(await scanCheck(image, URL, { codeSide: 480 })).toEqual({ scannable: false, otherContent: 'https://example.com/other', attempts: 1 });
  });

  it('fails an image that also holds a second, different code', async () => {
    const image = canvas(900, 420, [
      { content: URL, x: 30, y: 30, side: 360 },
      { content: 'https://evil.example/', x: 510, y: 30, side: 360 },
    ]);
    const verdict = await scanCheck(image, URL, { codeSide: 360 });
    expect(verdict.scannable).toBe(false);
    expect(verdict.otherContent).toBe('https://evil.example/');
  });

  it('fails blank and noise images after the whole (bounded) ladder', async () => {
    const blank = canvas(768, 768, []);
    expect(await scanCheck(blank, URL, { codeSide: 600 })).toEqual({ scannable: false, attempts: SCAN_LADDER.length });
    expect(await scanCheck(blank, URL)).toEqual({ scannable: false, attempts: SCAN_LADDER.length });
    expect(await scanCheck(noise(640, 480, 1), URL)).toEqual({ scannable: false, attempts: SCAN_LADDER.length });
  });

  it('runs ZXing first (hybrid binarizer, then two mean windows) and jsQR last', () => {
    expect(SCAN_LADDER.at(-1)).toMatchObject({ decoder: 'jsqr' });
    expect(SCAN_LADDER.slice(0, -1).every((rung) => rung.decoder === 'zxing')).toBe(true);
    const meanWindows = SCAN_LADDER.filter((rung) => rung.binarizer === 'MeanWindow');
    expect(meanWindows.map((rung) => [rung.codePx, rung.window, rung.bias])).toEqual([[200, 25, 0], [200, 15, 10]]);
    // The mean-window rungs come after every hybrid one: they are the widening, tried when those fail.
    expect(SCAN_LADDER.findIndex((rung) => rung.binarizer === 'MeanWindow')).toBe(SCAN_LADDER.filter((rung) => rung.decoder === 'zxing' && !rung.binarizer).length);
  });

  it('runs the ladder it is given instead of SCAN_LADDER', async () => {
    const image = canvas(400, 400, [{ content: URL, x: 40, y: 40, side: 320 }]);
    const ladder = [{ decoder: 'jsqr', codePx: 160, blur: false }] as const;
    expect(await scanCheck(image, URL, { codeSide: 320, ladder })).toMatchObject({ scannable: true, decoder: 'jsqr', attempts: 1 });
    expect(await scanCheck(noise(300, 300, 5), URL, { ladder })).toEqual({ scannable: false, attempts: 1 });
  });

  it('holds to maxAttempts', async () => {
    const image = noise(500, 500, 2);
    expect(await scanCheck(image, URL, { maxAttempts: 3 })).toEqual({ scannable: false, attempts: 3 });
    expect(await scanCheck(image, URL, { maxAttempts: 0 })).toEqual({ scannable: false, attempts: 0 });
    await expect(scanCheck(image, URL, { maxAttempts: -1 })).rejects.toThrow(RangeError);
    await expect(scanCheck(image, URL, { codeSide: 0 })).rejects.toThrow(RangeError);
    expect(await scanCheck(image, URL, { maxAttempts: 100 })).toEqual({ scannable: false, attempts: SCAN_LADDER.length });
  });

  it('skips rungs that would decode an image already tried, without counting them', async () => {
    // A 150 px code: no rung downscales (no upscaling), so ZXing tries the native image as
    // is, blurred, and binarized by each of the two mean windows, and jsQR tries it once.
    const small = canvas(200, 200, [{ content: 'x', x: 25, y: 25, side: 150 }]);
    expect(await scanCheck(small, URL, { codeSide: 150 })).toMatchObject({ scannable: false, otherContent: 'x', attempts: 1 });
    expect(await scanCheck(noise(200, 200, 3), URL, { codeSide: 150 })).toEqual({ scannable: false, attempts: 5 });
  });

  it.each([1, 3, 4] as const)('reads %i-channel images', async (channels) => {
    const image = canvas(400, 400, [{ content: URL, x: 40, y: 40, side: 320 }], channels);
    expect(await scanCheck(image, URL, { codeSide: 320 })).toMatchObject({ scannable: true, attempts: 1 });
  });

  it('reads a transparent PNG-style code as if over white', async () => {
    const image = canvas(400, 400, [{ content: URL, x: 40, y: 40, side: 320 }], 4, true);
    expect(await scanCheck(image, URL, { codeSide: 320 })).toMatchObject({ scannable: true });
  });

  it('finds a code covering 30% of a big canvas, given its size', async () => {
    const side = Math.round(1440 * 0.3);
    const image = canvas(2560, 1440, [{ content: URL, x: 1900, y: 200, side }]);
    const verdict = await scanCheck(image, URL, { codeSide: side });
    expect(verdict).toMatchObject({ scannable: true, decoder: 'zxing', attempts: 1 });
    // Scaled to ~400 px, but no further than the whole frame's 1 Mpx cap allows.
    expect(verdict.scale).toBeCloseTo(Math.sqrt((2560 * 1440) / (1024 * 1024)), 1);
  });

  it('compares Unicode content exactly', async () => {
    const text = 'Grüße aus Köln – 東京 ✓ 🚀';
    const image = canvas(500, 500, [{ content: text, x: 50, y: 50, side: 400 }]);
    expect(await scanCheck(image, text, { codeSide: 400 })).toMatchObject({ scannable: true });
    // The same words in another Unicode normal form are other bytes, hence other content.
    expect(await scanCheck(image, text.normalize('NFD'), { codeSide: 400 })).toMatchObject({ scannable: false, otherContent: text });
  });
});

describe('decodeAny', () => {
  it('returns the first text read, or null', async () => {
    const image = canvas(640, 640, [{ content: 'WIFI:T:WPA;S:harbour;P:k33p;;', x: 100, y: 100, side: 400 }]);
    expect(await decodeAny(image)).toMatchObject({ text: 'WIFI:T:WPA;S:harbour;P:k33p;;', decoder: 'zxing' });
    expect(await decodeAny(noise(300, 300, 4))).toBeNull();
  });

  it('reads no Micro QR or rMQR code (zxing-cpp counts them as QR; ZBar, Java ZXing and most phone readers read neither)', async () => {
    const wasm = readFileSync(createRequire(import.meta.url).resolve('zxing-wasm/writer/zxing_writer.wasm'));
    await prepareZXingModule({ overrides: { wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer }, fireImmediately: true });
    for (const format of ['MicroQRCode', 'rMQRCode'] as const) {
      const written = await writeBarcode('HELLO12', { format, scale: 8 });
      expect(written.error, format).toBe('');
      const image = await decodeImage(new Uint8Array(await written.image!.arrayBuffer()), { maxPixels: 1e7, channels: 3 });
      expect(await decodeAny(image), format).toBeNull();
    }
  });
});

describe('decoders', () => {
  const text = 'Grüße – 東京 ✓';
  const image = canvas(300, 300, [{ content: text, x: 30, y: 30, side: 240 }]);

  it('both read UTF-8 content from luminance', async () => {
    const luma = toLuma(image);
    expect(await zxingDecode(luma)).toEqual([text]);
    expect(jsqrDecode(luma)).toEqual([text]);
  });

  it('a jsQR rung reports jsQR', async () => {
    let seen: unknown;
    const attempts = await runLadder(image, [{ decoder: 'jsqr', codePx: 200, blur: false }], 240, (texts, rung) => {
      seen = { texts, ...rung };
      return true;
    });
    expect(attempts).toBe(1);
    // 240 / 200 = 1.2 would leave 250x250 pixels, over jsQR's cap of 200x200: 1.5 instead.
    expect(seen).toEqual({ texts: [text], decoder: 'jsqr', scale: 1.5, blurred: false });
  });
});
