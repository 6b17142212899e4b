/**
 * ZBar as the verdict runs it. It reads UTF-8 contents as written: left to guess a charset, ZBar
 * read "Crème" as "CrÃ¨me", and the verdict took that for another content, so no image of a
 * non-ASCII content could be reported scannable.
 *
 * And it reads an image the same way whatever it read before. Its QR reader fits finder patterns by
 * RANSAC with a random generator seeded when the scanner is made; a scanner kept across images
 * carries that state on, and a marginal capture then reads or not by turns. The fixture is such a
 * capture: check capture 11 (CHECK_SEED) of image 4 of `npm run bench -- scan` (seed 1, the demo
 * graphs' art), written as a luminance PNG.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import QRCode from 'qrcode';
import { scanGrayBuffer, ZBarConfigType, ZBarScanner, ZBarSymbolType } from '@undecaf/zbar-wasm';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/image/decode.ts';
import { toLuma, type LumaImage } from '../../src/image/luma.ts';
import { rawImage } from '../../src/image/raw.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { zbarDecode, zbarText, zxingDecode } from '../../src/qr/decoders.ts';
import { encodeQr } from '../../src/qr/encode.ts';
import { familyVerdict } from '../../src/qr/robustness.ts';
import { zbarDecode as refereeZbar } from '../helpers/independent-decoders.ts';

const TRIES = 8;

async function capture(): Promise<LumaImage> {
  const bytes = await readFile(new URL('./fixtures/zbar-marginal-capture.png', import.meta.url));
  return toLuma(await decodeImage(bytes, { maxPixels: 1 << 20, channels: 3 }));
}

const UNICODE = ['Crème brûlée à Zürich, ¿qué tal?', 'Grüße aus Köln – 東京 ✓ café'];

describe("ZBar in the verdict reads the code's bytes as UTF-8", () => {
  it.each(UNICODE)('reads %s as written', async (content) => {
    const matrix = encodeQr(content);
    const px = 6;
    const side = (matrix.size + 8) * px;
    const data = new Uint8Array(side * side).fill(255);
    for (let i = 0; i < matrix.dark.length; i++) {
      if (!matrix.dark[i]) continue;
      const x = (4 + (i % matrix.size)) * px;
      const y = (4 + Math.floor(i / matrix.size)) * px;
      for (let k = 0; k < px; k++) data.fill(0, (y + k) * side + x, (y + k) * side + x + px);
    }
    const luma = rawImage(data, side, side, 1) as LumaImage;
    expect(await zbarDecode(luma)).toEqual([content]);
    expect(await refereeZbar(luma)).toEqual([content]);
  });

  it('reads a Kanji-mode code (Shift JIS bytes, as Japanese generators write) as ZXing does; bytes neither UTF-8 nor Shift JIS as before', async () => {
    const toSJIS = createRequire(import.meta.url)('qrcode/helper/to-sjis') as (c: string) => number;
    for (const text of ['日本語', '漢字とかな']) {
      const png = await QRCode.toBuffer(text, { toSJISFunc: toSJIS, errorCorrectionLevel: 'M', scale: 6 });
      const luma = toLuma(await decodeImage(png, { maxPixels: 1 << 20, channels: 3 }));
      expect(await zbarDecode(luma)).toEqual([text]);
      expect(await zxingDecode(luma)).toEqual([text]);
    }
    // Latin-1 without an ECI, ending in a lead byte: what every decoder gives, replacement character included.
    expect(zbarText(new Uint8Array([0x63, 0x61, 0x66, 0xe9]))).toBe('caf\uFFFD');
  });

  it('a plain control image of a non-ASCII content passes the family verdict', async () => {
    const canvas = { width: 512, height: 512 };
    const placement = placementFor(canvas, 0.8);
    const control = renderControlImage({ content: UNICODE[0]!, pattern: 's1', canvas, placement, background: 'white' });
    const verdict = await familyVerdict(control.image, UNICODE[0]!, placement, { modules: placement.side / control.layout.moduleSize });
    expect(verdict.robustness?.otherContent).toBeUndefined();
    expect(verdict.scannable).toBe(true);
  });
});

describe('ZBar with a new scanner per image', () => {
  it('the fixture is marginal: one scanner kept across tries reads it only on some of them', async () => {
    const luma = await capture();
    const kept = await ZBarScanner.create();
    kept.setConfig(ZBarSymbolType.ZBAR_NONE, ZBarConfigType.ZBAR_CFG_ENABLE, 0);
    kept.setConfig(ZBarSymbolType.ZBAR_QRCODE, ZBarConfigType.ZBAR_CFG_ENABLE, 1);
    const reads: number[] = [];
    for (let k = 0; k < TRIES; k++) reads.push((await scanGrayBuffer(luma.data.slice().buffer, luma.width, luma.height, kept)).length);
    kept.destroy();
    expect(new Set(reads).size, `reads per try: ${reads.join('')}`).toBe(2);
  });

  it("the verdict's decoder and the referee read it the same way every time", async () => {
    const luma = await capture();
    const verdict = await Promise.all(Array.from({ length: TRIES }, () => zbarDecode(luma)));
    expect(new Set(verdict.map((t) => JSON.stringify(t))).size).toBe(1);
    const referee: string[][] = [];
    for (let k = 0; k < TRIES; k++) referee.push(await refereeZbar(luma));
    expect(new Set(referee.map((t) => JSON.stringify(t))).size).toBe(1);
    expect(referee[0]).toEqual(verdict[0]);
  });
});
