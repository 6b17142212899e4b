/**
 * Outpainting's pixel geometry: placing, cropping, and the feathered paste-back that keeps the
 * client's pixels byte for byte outside the seam band.
 */
import { describe, expect, it } from 'vitest';
import { cropImage, openSides, pasteWithFeather, placeOnCanvas, seamAlpha, seamRamp, toRgb } from '../../src/image/canvas.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';

/** RGB image whose every byte depends on its position, so misplaced bytes show. */
function patterned(width: number, height: number, salt = 0): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (i * 37 + salt * 101 + (i >> 5)) & 0xff;
  return rawImage(data, width, height, 3);
}

function solid(width: number, height: number, rgb: [number, number, number]): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let p = 0; p < width * height; p++) data.set(rgb, p * 3);
  return rawImage(data, width, height, 3);
}

const px = (im: RawImage, x: number, y: number): number[] => Array.from(im.data.subarray((y * im.width + x) * 3, (y * im.width + x) * 3 + 3));

describe('toRgb', () => {
  it('expands grey and drops alpha; RGB comes back as is', () => {
    expect(Array.from(toRgb(rawImage(Uint8Array.of(10, 200), 2, 1, 1)).data)).toEqual([10, 10, 10, 200, 200, 200]);
    expect(Array.from(toRgb(rawImage(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), 2, 1, 4)).data)).toEqual([1, 2, 3, 5, 6, 7]);
    const rgb = patterned(3, 2);
    expect(toRgb(rgb)).toBe(rgb);
  });
});

describe('placeOnCanvas and cropImage', () => {
  it('places the image at its offset, fills the rest, and crops back the same bytes', () => {
    const image = patterned(5, 4);
    const canvas = placeOnCanvas(image, 12, 9, 3, 2, [1, 2, 3]);
    expect([canvas.width, canvas.height]).toEqual([12, 9]);
    expect(px(canvas, 0, 0)).toEqual([1, 2, 3]);
    expect(px(canvas, 11, 8)).toEqual([1, 2, 3]);
    expect(px(canvas, 3, 2)).toEqual(px(image, 0, 0));
    expect(Buffer.from(cropImage(canvas, { x: 3, y: 2, width: 5, height: 4 }).data).equals(Buffer.from(image.data))).toBe(true);
  });

  it('refuses rectangles outside the canvas', () => {
    expect(() => placeOnCanvas(patterned(5, 4), 6, 6, 2, 0)).toThrow(/does not fit 6x6/);
    expect(() => cropImage(patterned(5, 4), { x: 1, y: 1, width: 5, height: 2 })).toThrow(/not inside 5x4/);
  });

  it('open sides are the ones with room beyond them', () => {
    expect(openSides({ x: 0, y: 2, width: 10, height: 3 }, { x: 0, y: 0, width: 12, height: 5 })).toEqual({ left: false, right: true, top: true, bottom: false });
  });
});

describe('seam weights', () => {
  it('fall from 1 at the open edge to exactly 0 at the band, monotonically', () => {
    expect(seamRamp(0, 8)).toBe(1);
    expect(seamRamp(8, 8)).toBe(0);
    expect(seamRamp(100, 8)).toBe(0);
    expect(seamRamp(3, 0)).toBe(0);
    let last = 1;
    for (let d = 0.5; d < 8; d += 0.5) {
      const a = seamRamp(d, 8);
      expect(a).toBeLessThan(last);
      expect(a).toBeGreaterThan(0);
      last = a;
    }
  });

  it('count only the open sides', () => {
    const kept = { x: 10, y: 10, width: 20, height: 20 };
    const leftOnly = { left: true, right: false, top: false, bottom: false };
    expect(seamAlpha(10, 10, kept, leftOnly, 4)).toBeGreaterThan(0.9);
    expect(seamAlpha(29, 10, kept, leftOnly, 4)).toBe(0); // right edge: not a seam
    expect(seamAlpha(14, 20, kept, leftOnly, 4)).toBe(0); // 4.5 px in: beyond the band
  });
});

describe('pasteWithFeather', () => {
  const canvas = solid(40, 30, [250, 0, 0]);
  const original = patterned(20, 14, 3);
  const at = { x: 12, y: 9 };

  it('keeps every original byte beyond the feather band and blends inside it, on padded sides only', () => {
    const seams = { left: true, right: false, top: true, bottom: false };
    const feather = 5;
    const out = pasteWithFeather(canvas, original, at.x, at.y, seams, feather);
    let blended = 0;
    for (let y = 0; y < original.height; y++) {
      for (let x = 0; x < original.width; x++) {
        const inBand = x < feather || y < feather;
        const got = px(out, at.x + x, at.y + y);
        if (!inBand) expect(got, `(${x}, ${y})`).toEqual(px(original, x, y));
        else if (got.join() !== px(original, x, y).join()) blended++;
      }
    }
    expect(blended).toBeGreaterThan(0);
    // The outer row/column leans toward the canvas (alpha > 0.8 at half a pixel from the seam).
    expect(px(out, at.x, at.y + 10)[0]).toBeGreaterThan(0.8 * 250 - 1);
    // Pixels outside the original are the canvas's.
    expect(px(out, 0, 0)).toEqual([250, 0, 0]);
    expect(px(out, 39, 29)).toEqual([250, 0, 0]);
    // The input canvas is not modified.
    expect(px(canvas, at.x + 5, at.y + 5)).toEqual([250, 0, 0]);
  });

  it('with every side padded, only the band around the edge differs; feather 0 pastes exactly', () => {
    const all = { left: true, right: true, top: true, bottom: true };
    const out = pasteWithFeather(canvas, original, at.x, at.y, all, 3);
    for (let y = 3; y < original.height - 3; y++) for (let x = 3; x < original.width - 3; x++) expect(px(out, at.x + x, at.y + y)).toEqual(px(original, x, y));
    const exact = pasteWithFeather(canvas, original, at.x, at.y, all, 0);
    expect(Buffer.from(cropImage(exact, { x: at.x, y: at.y, width: 20, height: 14 }).data).equals(Buffer.from(original.data))).toBe(true);
  });

  it('a feather wider than the image blends it all but stays inside it', () => {
    const out = pasteWithFeather(canvas, original, at.x, at.y, { left: true, right: true, top: false, bottom: false }, 50);
    expect(px(out, at.x - 1, at.y)).toEqual([250, 0, 0]);
    expect(px(out, at.x + 10, at.y + 7)).not.toEqual(px(original, 10, 7));
  });
});
