/**
 * The scan check's mean-window rungs: a faint artistic code that ZXing's hybrid binarizer
 * flattens into the picture (every rung of the ladder before them misses it) and that a
 * phone-grade decoder reads is read now, and a faint code of another content is still refused.
 */
import { describe, expect, it } from 'vitest';
import type { LumaImage } from '../../src/image/luma.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { meanWindowThreshold } from '../../src/qr/binarize.ts';
import { renderControlImage } from '../../src/qr/control-image.ts';
import { SCAN_LADDER, scanCheck } from '../../src/qr/scan.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { zbarDecode } from '../helpers/independent-decoders.ts';

const URL = 'https://example.com/p/42?ref=qr';
const SIDE = 640;

/**
 * A dotted code (pattern d1) that moves a soft, wavy grey picture by only `contrast` levels,
 * with a little grain: the way a ControlNet often leaves an art code, dark and light modules a
 * few levels apart. Seeded.
 */
function faintCode(content: string, contrast: number): { image: RawImage; codeSide: number } {
  const control = renderControlImage({ content, pattern: 'd1', canvas: { width: SIDE, height: SIDE }, placement: { x: 40, y: 40, side: 560 }, background: 'white' });
  const random = mulberry32(contrast);
  const data = new Uint8Array(SIDE * SIDE * 3);
  for (let i = 0; i < SIDE * SIDE; i++) {
    const x = i % SIDE;
    const y = Math.floor(i / SIDE);
    const picture = 120 + 25 * Math.sin(x / 70) * Math.cos(y / 90);
    const v = picture + (control.image.data[i]! / 255 - 0.5) * contrast + (random() - 0.5) * 6;
    data.fill(Math.max(0, Math.min(255, Math.round(v))), i * 3, i * 3 + 3);
  }
  return { image: rawImage(data, SIDE, SIDE, 3), codeSide: control.layout.codePixels };
}

/** The ladder as it was before the mean-window rungs: ZXing's hybrid binarizer and jsQR only. */
const HYBRID_ONLY = SCAN_LADDER.filter((rung) => rung.binarizer === undefined);

describe('mean-window rungs', () => {
  it('read a faint code that a phone-grade decoder reads and the hybrid-only ladder misses', async () => {
    const { image, codeSide } = faintCode(URL, 16);
    // The image is a fair test: a decoder we did not write reads exactly the content.
    expect(await zbarDecode(image)).toEqual([URL]);
    expect(HYBRID_ONLY.length).toBeLessThan(SCAN_LADDER.length);
    expect(await scanCheck(image, URL, { codeSide, ladder: HYBRID_ONLY })).toEqual({ scannable: false, attempts: HYBRID_ONLY.length });
    expect(await scanCheck(image, URL, { codeSide })).toMatchObject({ scannable: true, decoder: 'zxing', binarizer: 'MeanWindow' });
  });

  it('still refuse a faint code of another content, saying what they read', async () => {
    const other = 'https://example.com/p/43?ref=qr';
    const { image, codeSide } = faintCode(other, 16);
    expect(await scanCheck(image, URL, { codeSide })).toMatchObject({ scannable: false, otherContent: other });
    expect(await scanCheck(image, other, { codeSide })).toMatchObject({ scannable: true, binarizer: 'MeanWindow' });
  });

  it('read nothing where there is no code: blank and flat grainy images', async () => {
    const blank = rawImage(new Uint8Array(SIDE * SIDE).fill(128), SIDE, SIDE, 1);
    const random = mulberry32(3);
    const grain = rawImage(Uint8Array.from({ length: SIDE * SIDE }, () => 120 + Math.floor(random() * 16)), SIDE, SIDE, 1);
    for (const image of [blank, grain]) expect(await scanCheck(image, URL, { codeSide: 500 })).toEqual({ scannable: false, attempts: SCAN_LADDER.length });
  });
});

describe('meanWindowThreshold', () => {
  const luma = (width: number, height: number, values: number[]) => rawImage(Uint8Array.from(values), width, height, 1) as LumaImage;

  it('marks dark what is below its window mean less the bias', () => {
    // A 1-pixel dip of 10 levels in a flat row: dark with no bias, light with a bias over 10.
    const row = luma(7, 1, [100, 100, 100, 90, 100, 100, 100]);
    expect([...meanWindowThreshold(row, 5, 0).data]).toEqual([255, 255, 255, 0, 255, 255, 255]);
    expect([...meanWindowThreshold(row, 5, 10).data]).toEqual([255, 255, 255, 255, 255, 255, 255]);
  });

  it('clips the window at the edges and follows a slow gradient', () => {
    // A ramp: every pixel equals its window's mean inside, so none is darker than it.
    const ramp = luma(9, 1, [10, 20, 30, 40, 50, 60, 70, 80, 90]);
    const out = meanWindowThreshold(ramp, 3, 0).data;
    expect([...out.subarray(1, 8)]).toEqual([255, 255, 255, 255, 255, 255, 255]);
    // At the left edge the clipped window (10, 20) has mean 15: 10 is below it.
    expect(out[0]).toBe(0);
    // Two rows, columns summed too: the dark pixel in row 1 is found under a 3x3 window.
    const square = luma(3, 2, [200, 200, 200, 200, 50, 200]);
    expect([...meanWindowThreshold(square, 3, 0).data]).toEqual([255, 255, 255, 255, 0, 255]);
  });
});
