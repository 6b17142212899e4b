import { describe, expect, it } from 'vitest';
import { blur3, downscaleArea, lumaToRgba, toLuma, type LumaImage } from '../../src/image/luma.ts';
import { rawImage } from '../../src/image/raw.ts';

const grey = (values: number[], width: number, height: number) => rawImage(Uint8Array.from(values), width, height, 1) as LumaImage;

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

describe('toLuma', () => {
  it('returns 1-channel input as is', () => {
    const image = grey([1, 2, 3, 4], 2, 2);
    expect(toLuma(image)).toBe(image);
  });

  it('maps every grey level to itself and weighs R, G, B as BT.601', () => {
    const rgb = new Uint8Array(256 * 3);
    for (let v = 0; v < 256; v++) rgb.fill(v, v * 3, v * 3 + 3);
    expect([...toLuma(rawImage(rgb, 256, 1, 3)).data]).toEqual([...Array(256).keys()]);
    const primaries = toLuma(rawImage(Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255]), 3, 1, 3));
    expect([...primaries.data]).toEqual([76, 150, 29]); // 0.299, 0.587, 0.114 of 255
    expect(primaries.channels).toBe(1);
  });

  it('composites RGBA over white, as a phone sees a transparent PNG', () => {
    const rgba = Uint8Array.from([0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 128, 200, 200, 200, 255]);
    expect([...toLuma(rawImage(rgba, 4, 1, 4)).data]).toEqual([0, 255, 127, 200]);
  });
});

describe('lumaToRgba', () => {
  it('repeats the level on R, G, B with opaque alpha', () => {
    expect([...lumaToRgba(grey([0, 17, 255], 3, 1))]).toEqual([0, 0, 0, 255, 17, 17, 17, 255, 255, 255, 255, 255]);
  });
});

describe('downscaleArea', () => {
  it('averages whole blocks at an integer factor', () => {
    const image = grey([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150], 4, 4);
    const half = downscaleArea(image, 2, 2);
    expect([half.width, half.height, half.channels]).toEqual([2, 2, 1]);
    expect([...half.data]).toEqual([25, 45, 105, 125]); // e.g. (0+10+40+50)/4
  });

  it('weighs a partly covered pixel by the part covered', () => {
    // 3 -> 2: cell 0 covers [0, 1.5), cell 1 covers [1.5, 3).
    expect([...downscaleArea(grey([0, 90, 180], 3, 1), 2, 1).data]).toEqual([30, 150]);
    expect([...downscaleArea(grey([0, 90, 180], 1, 3), 1, 2).data]).toEqual([30, 150]);
    // 5 -> 2 in both directions at once: the mean of the 2.5 x 2.5 area.
    const ramp = grey([...Array(25).keys()].map((i) => (i % 5) * 40), 5, 5);
    expect([...downscaleArea(ramp, 2, 2).data]).toEqual([32, 128, 32, 128]); // (0 + 40 + 80 * 0.5) / 2.5 = 32
  });

  it('keeps a flat image flat at any factor and preserves the mean', () => {
    const flat = rawImage(new Uint8Array(777 * 555).fill(200), 777, 555, 1);
    const small = downscaleArea(flat, 321, 233);
    expect([small.width, small.height]).toEqual([321, 233]);
    expect(small.data.every((v) => v === 200)).toBe(true);
    const random = seeded(3);
    const noise = grey(Array.from({ length: 300 * 200 }, () => Math.floor(random() * 256)), 300, 200);
    const mean = (d: Uint8Array) => d.reduce((a, b) => a + b, 0) / d.length;
    expect(mean(downscaleArea(noise, 77, 51).data)).toBeCloseTo(mean(noise.data), 0);
  });

  it('converts colour on the fly exactly as toLuma then downscale', () => {
    const random = seeded(9);
    const rgb = rawImage(Uint8Array.from({ length: 97 * 61 * 3 }, () => Math.floor(random() * 256)), 97, 61, 3);
    expect([...downscaleArea(rgb, 40, 25).data]).toEqual([...downscaleArea(toLuma(rgb), 40, 25).data]);
    const rgba = rawImage(Uint8Array.from({ length: 50 * 30 * 4 }, () => Math.floor(random() * 256)), 50, 30, 4);
    expect([...downscaleArea(rgba, 20, 13).data]).toEqual([...downscaleArea(toLuma(rgba), 20, 13).data]);
  });

  it('returns the luminance itself at the same size and refuses to upscale', () => {
    const image = grey([1, 2, 3, 4], 2, 2);
    expect(downscaleArea(image, 2, 2)).toBe(image);
    expect(() => downscaleArea(image, 3, 2)).toThrow(RangeError);
    expect(() => downscaleArea(image, 0, 1)).toThrow(RangeError);
    expect(() => downscaleArea(image, 1.5, 1)).toThrow(RangeError);
  });
});

describe('blur3', () => {
  it('spreads an impulse as [1 2 1] x [1 2 1] / 16 and keeps flat areas', () => {
    const impulse = grey([0, 0, 0, 0, 255, 0, 0, 0, 0], 3, 3);
    expect([...blur3(impulse).data]).toEqual([16, 32, 16, 32, 64, 32, 16, 32, 16]);
    const flat = grey(Array(12).fill(77), 4, 3);
    expect([...blur3(flat).data]).toEqual(Array(12).fill(77));
  });

  it('handles one-pixel-wide images', () => {
    expect([...blur3(grey([100], 1, 1)).data]).toEqual([100]);
    expect([...blur3(grey([0, 255, 0], 1, 3)).data]).toEqual([64, 128, 64]);
  });
});
