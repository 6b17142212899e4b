/**
 * ZXing's hybrid binarizer as the module check models it (src/qr/hybrid-threshold.ts): its
 * thresholds agree with the binarizer of ZXing's Java port (@zxing/library, a decoder we did not
 * write), and a code drawn in mid-grey on white, which that binarizer reads light in its flat
 * blocks, is found wrong by the check and repaired until the Java port reads it.
 */
import zxing from '@zxing/library';
import { describe, expect, it } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { toLuma } from '../../src/image/luma.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { hybridThresholds, type BoxMeans } from '../../src/qr/hybrid-threshold.ts';
import { checkModules, repairModules } from '../../src/qr/repair.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

const { BinaryBitmap, HybridBinarizer, QRCodeReader, RGBLuminanceSource } = zxing;
const CONTENT = 'https://qr-art.example/p/hybrid';

const luminanceSource = (luma: RawImage) => new RGBLuminanceSource(new Uint8ClampedArray(luma.data.buffer, luma.data.byteOffset, luma.data.length), luma.width, luma.height);

/** Box means of a 1-channel image straight from its pixels (small test images only). */
function boxMeans(luma: RawImage): BoxMeans {
  return {
    width: luma.width,
    height: luma.height,
    mean(x0, y0, x1, y1) {
      let sum = 0;
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) sum += luma.data[y * luma.width + x]!;
      return sum / ((x1 - x0) * (y1 - y0));
    },
  };
}

/** The code drawn with dark modules at `dark` and light ones at `light`, plus a little noise. */
function greyCode(dark: number, light: number, seed = 5): { image: RawImage; control: ReturnType<typeof renderControlImage> } {
  const size = 640;
  const canvas = { width: size, height: size };
  const control = renderControlImage({ content: CONTENT, pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray' });
  const random = mulberry32(seed);
  const data = new Uint8Array(size * size);
  for (let i = 0; i < data.length; i++) {
    const level = control.image.data[i]! < 128 ? dark : light;
    data[i] = Math.max(0, Math.min(255, Math.round(level + (random() - 0.5) * 4)));
  }
  return { image: rawImage(data, size, size, 1), control };
}

function javaPortReads(image: RawImage): string | undefined {
  try {
    return new QRCodeReader().decode(new BinaryBitmap(new HybridBinarizer(luminanceSource(toLuma(image))))).getText();
  } catch {
    return undefined;
  }
}

describe("the module check's model of ZXing's hybrid binarizer", () => {
  it("classifies every pixel as ZXing's Java port does, on art with flat and busy blocks alike", () => {
    const random = mulberry32(9);
    const { image } = greyCode(150, 245);
    // Smooth shading over the code, so that some blocks are flat and some are not.
    const luma = rawImage(
      Uint8Array.from(image.data, (v, i) => Math.max(0, Math.min(255, v - 40 * Math.sin((i % 640) / 100) + random() * 2))),
      640,
      640,
      1,
    );
    const points = new Float32Array(2 * luma.width * luma.height);
    for (let i = 0; i < luma.width * luma.height; i++) {
      points[2 * i] = i % luma.width;
      points[2 * i + 1] = Math.floor(i / luma.width);
    }
    const ours = hybridThresholds(boxMeans(luma), 1, points, { contrast: 1, brightness: 0 });
    const theirs = new HybridBinarizer(luminanceSource(luma)).getBlackMatrix();
    let compared = 0;
    let disagree = 0;
    for (let i = 0; i < luma.width * luma.height; i++) {
      const v = luma.data[i]!;
      // Within a level of the threshold the two may round apart.
      if (Math.abs(v - ours[i]!) <= 1) continue;
      compared++;
      if (v <= ours[i]! !== theirs.get(i % luma.width, Math.floor(i / luma.width))) disagree++;
    }
    expect(compared).toBeGreaterThan(0.95 * luma.width * luma.height);
    // ZXing divides in integers and we do not: a flat block whose minimum sits within a level of
    // its neighbours' black point may go either way (here 0.012% of the pixels). A local mean
    // without the flat-block rule disagrees on far more and fails this.
    expect(disagree / compared).toBeLessThan(0.001);
  });

  it("finds such a code's dark modules wrong and repairs it until the Java port reads it", () => {
    const { image, control } = greyCode(165, 255);
    expect(javaPortReads(image)).toBeUndefined();
    const geometry = { matrix: control.matrix, layout: control.layout };
    expect(checkModules(image, geometry).wrong).toBeGreaterThan(0);
    const repaired = repairModules(image, geometry);
    expect(javaPortReads(repaired.image)).toBe(CONTENT);
    expect(repaired.after.wrong).toBe(0);
  });

  it('asks nothing more of a plain black-on-white code', () => {
    const { image, control } = greyCode(0, 255);
    expect(checkModules(image, { matrix: control.matrix, layout: control.layout }).wrong).toBe(0);
  });
});
