import { describe, expect, it } from 'vitest';
import { rawImage } from '../../src/image/raw.ts';
import { placeByArea } from '../../src/image/resample.ts';

describe('placeByArea: an image scaled and shifted by exact area coverage', () => {
  // One row: black, white, black.
  const row = rawImage(Uint8Array.from([0, 255, 0]), 3, 1, 1);

  it('upscales by a whole factor at a whole offset to pure blocks, background around', () => {
    const out = placeByArea(row, { width: 8, height: 1 }, { scaleX: 2, scaleY: 1, offsetX: 1, offsetY: 0 }, 200);
    expect(Array.from(out.data)).toEqual([200, 0, 0, 255, 255, 0, 0, 200]);
  });

  it('blends the pixels a fractional offset or scale splits, by the share each covers', () => {
    const half = placeByArea(row, { width: 4, height: 1 }, { scaleX: 1, scaleY: 1, offsetX: 0.5, offsetY: 0 });
    expect(Array.from(half.data)).toEqual([128, 128, 128, 128]); // 255/2 rounds up; the ends are half background
    const stretched = placeByArea(row, { width: 4, height: 1 }, { scaleX: 4 / 3, scaleY: 1, offsetX: 0, offsetY: 0 });
    // Canvas pixel 1 covers source [0.75, 1.5): a third of it black, two thirds white.
    expect(Array.from(stretched.data)).toEqual([0, 170, 170, 0]);
  });

  it('downscales by averaging, in both directions and every channel', () => {
    const rgb = rawImage(Uint8Array.from([10, 20, 30, 30, 40, 50, 50, 60, 70, 70, 80, 90]), 2, 2, 3);
    const out = placeByArea(rgb, { width: 1, height: 1 }, { scaleX: 0.5, scaleY: 0.5, offsetX: 0, offsetY: 0 });
    expect(Array.from(out.data)).toEqual([40, 50, 60]);
  });
});
