/**
 * ZBar reads an image the same way whatever it read before. Its QR reader fits finder patterns by
 * RANSAC with a random generator seeded when the scanner is made; a scanner kept across images
 * carries that state on, and a marginal capture then reads or not by turns. The fixture is such a
 * capture: check capture 11 (CHECK_SEED) of image 4 of `npm run bench -- scan` (seed 1, the demo
 * graphs' art), written as a luminance PNG.
 */
import { readFile } from 'node:fs/promises';
import { scanGrayBuffer, ZBarConfigType, ZBarScanner, ZBarSymbolType } from '@undecaf/zbar-wasm';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/image/decode.ts';
import { toLuma, type LumaImage } from '../../src/image/luma.ts';
import { zbarDecode } from '../../src/qr/decoders.ts';
import { zbarDecode as refereeZbar } from '../helpers/independent-decoders.ts';

const TRIES = 8;

async function capture(): Promise<LumaImage> {
  const bytes = await readFile(new URL('./fixtures/zbar-marginal-capture.png', import.meta.url));
  return toLuma(await decodeImage(bytes, { maxPixels: 1 << 20, channels: 3 }));
}

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
