import { describe, expect, it } from 'vitest';
import { rawImage } from '../../src/image/raw.ts';
import { packRgbInterleaved, packRgbPlanar, unpackRgbPlanar } from '../../src/pipeline/tensors.ts';

describe('image ↔ tensor layout', () => {
  it('packs interleaved RGB into planes with the given scale and bias', () => {
    const image = rawImage(Uint8Array.of(0, 51, 255, 255, 102, 0), 2, 1, 3);
    const out = new Float32Array(6);
    packRgbPlanar(image, out, 0, 2, -1);
    expect(Array.from(out, (v) => +v.toFixed(4))).toEqual([-1, 1, -0.6, -0.2, 1, -1]);
  });

  it('packs a one-channel image into all three planes, at an offset, dropping nothing else', () => {
    const image = rawImage(Uint8Array.of(0, 255, 51), 3, 1, 1);
    const out = new Float32Array(11).fill(9);
    packRgbPlanar(image, out, 2);
    expect(Array.from(out, (v) => +v.toFixed(4))).toEqual([9, 9, 0, 1, 0.2, 0, 1, 0.2, 0, 1, 0.2]);
  });

  it('drops alpha from an RGBA image', () => {
    const image = rawImage(Uint8Array.of(255, 0, 0, 7), 1, 1, 4);
    const out = new Float32Array(3);
    packRgbPlanar(image, out);
    expect(Array.from(out)).toEqual([1, 0, 0]);
  });

  it('refuses an output buffer that is too small', () => {
    expect(() => packRgbPlanar(rawImage(new Uint8Array(12), 2, 2, 3), new Float32Array(11))).toThrow(RangeError);
  });

  it('unpacks planes to interleaved bytes, rounding, clamping out-of-range values and mapping NaN to 0', () => {
    const planes = Float32Array.of(-1, 1, 0, -3, /* g */ 0.5, Number.NaN, 2, -0.999, /* b */ 0, 0, 0, 0);
    const image = unpackRgbPlanar(planes, 0, 4, 1);
    expect(image.channels).toBe(3);
    expect(Array.from(image.data)).toEqual([0, 191, 128, 255, 0, 128, 128, 255, 128, 0, 0, 128]);
  });

  it('round-trips every byte value through [-1, 1] planes', () => {
    const bytes = Uint8Array.from({ length: 256 * 3 }, (_, i) => (i * 7) % 256);
    const image = rawImage(bytes, 256, 1, 3);
    const planes = new Float32Array(256 * 3);
    packRgbPlanar(image, planes, 0, 2, -1);
    expect(Array.from(unpackRgbPlanar(planes, 0, 256, 1).data)).toEqual(Array.from(bytes));
  });

  it('packs NHWC floats in [0, 1] for the safety checker, gray replicated', () => {
    const out = new Float32Array(6);
    packRgbInterleaved(rawImage(Uint8Array.of(255, 0), 2, 1, 1), out);
    expect(Array.from(out)).toEqual([1, 1, 1, 0, 0, 0]);
  });
});
