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
import { flatDarkLimit, HALF_BLOCK_PHASES, HARSH_EXPOSURE, hybridThresholdMaps, hybridThresholds, type BoxMeans } from '../../src/qr/hybrid-threshold.ts';
import { ModuleRole } from '../../src/qr/encode.ts';
import { checkModules, repairModules } from '../../src/qr/repair/index.ts';
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

/** A 1-channel image as the capture family's harsh end exposes it (contrast around its mean, then brighter). */
function exposed(image: RawImage): RawImage {
  const mean = image.data.reduce((a, v) => a + v, 0) / image.data.length;
  const { contrast, brightness } = HARSH_EXPOSURE;
  return rawImage(Uint8Array.from(image.data, (v) => Math.max(0, Math.min(255, Math.round(mean + contrast * (v - mean) + brightness)))), image.width, image.height, 1);
}

/** Pixels of `image` more than a level from our threshold, and how many of them the Java port's binarizer classifies otherwise. */
function agreement(image: RawImage, ours: Float32Array): { compared: number; disagree: number } {
  const theirs = new HybridBinarizer(luminanceSource(image)).getBlackMatrix();
  let compared = 0;
  let disagree = 0;
  for (let i = 0; i < image.width * image.height; i++) {
    const v = image.data[i]!;
    // Within a level of the threshold the two may round apart.
    if (Math.abs(v - ours[i]!) <= 1) continue;
    compared++;
    if (v <= ours[i]! !== theirs.get(i % image.width, Math.floor(i / image.width))) disagree++;
  }
  return { compared, disagree };
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
    const { compared, disagree } = agreement(luma, ours);
    expect(compared).toBeGreaterThan(0.95 * luma.width * luma.height);
    // ZXing divides in integers and we do not: a flat block whose minimum sits within a level of
    // its neighbours' black point may go either way (here 0.012% of the pixels). A local mean
    // without the flat-block rule disagrees on far more and fails this.
    expect(disagree / compared).toBeLessThan(0.001);
  });

  it('classifies every pixel as the Java port does on a capture whose block grid falls half a block in', () => {
    const { image } = greyCode(150, 245, 7);
    const luma = rawImage(Uint8Array.from(image.data, (v, i) => Math.max(0, v - 50 * Math.cos(Math.floor(i / 640) / 90))), 640, 640, 1);
    const points = new Float32Array(2 * luma.width * luma.height);
    for (let i = 0; i < luma.width * luma.height; i++) {
      points[2 * i] = i % luma.width;
      points[2 * i + 1] = Math.floor(i / luma.width);
    }
    const asDrawn = [{ contrast: 1, brightness: 0 }];
    const maps = hybridThresholdMaps(boxMeans(luma), 1, points, asDrawn, HALF_BLOCK_PHASES);
    expect(maps).toHaveLength(4);
    HALF_BLOCK_PHASES.forEach(([px, py], k) => {
      // The decoder's image starts (px, py) pixels in: the same scene with its block grid moved.
      const width = luma.width - px;
      const height = luma.height - py;
      const cropped = rawImage(Uint8Array.from({ length: width * height }, (_, i) => luma.data[(Math.floor(i / width) + py) * luma.width + (i % width) + px]!), width, height, 1);
      const ours = Float32Array.from({ length: width * height }, (_, i) => maps[k]![(Math.floor(i / width) + py) * luma.width + (i % width) + px]!);
      const { compared, disagree } = agreement(cropped, ours);
      expect(compared).toBeGreaterThan(0.95 * width * height);
      expect(disagree / compared).toBeLessThan(0.001);
    });
    // The phases see different flat blocks: the maps are not one map four times.
    const differing = (a: Float32Array, b: Float32Array) => a.reduce((n, v, i) => n + (Math.abs(v - b[i]!) > 2 ? 1 : 0), 0);
    expect(differing(maps[0]!, maps[3]!)).toBeGreaterThan(0.01 * luma.width * luma.height);
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

  it("takes a flat dark run for dark only below half the light around it, as a phone's exposure sees both", () => {
    expect(flatDarkLimit(240, 180, { contrast: 1, brightness: 0 })).toBe(120);
    const limit = flatDarkLimit(240, 180);
    const seen = (v: number) => 180 + HARSH_EXPOSURE.contrast * (v - 180) + HARSH_EXPOSURE.brightness;
    expect(seen(limit)).toBeCloseTo(seen(240) / 2, 6);
    expect(limit).toBeLessThan(120);
  });

  it("holds an alignment pattern's dark modules to the same level as a finder's", () => {
    // Java ZXing fits its grid to the alignment pattern nearest the bottom-right corner, found by
    // its 1:1:1 runs: drawn at 125 beside 240, its centre reads light under a phone's exposure.
    const { image, control } = greyCode(0, 240);
    const { layout, matrix } = control;
    const alignment = (i: number) => matrix.role[i] === ModuleRole.Alignment && matrix.dark[i] === 1;
    const data = image.data.slice();
    for (let y = 0; y < image.height; y++) {
      for (let x = 0; x < image.width; x++) {
        const r = Math.floor((y - layout.codeY) / layout.moduleSize);
        const c = Math.floor((x - layout.codeX) / layout.moduleSize);
        if (r >= 0 && c >= 0 && r < matrix.size && c < matrix.size && alignment(r * matrix.size + c)) data[y * image.width + x] = 125;
      }
    }
    const grey = rawImage(data, image.width, image.height, 1);
    const geometry = { matrix, layout };
    expect(checkModules(grey, geometry).wrongFunction).toBeGreaterThan(0);
    const repaired = repairModules(grey, geometry);
    expect(repaired.after.wrong).toBe(0);
    const mean = repaired.image.data.reduce((a, v) => a + v, 0) / repaired.image.data.length;
    const limit = flatDarkLimit(240, mean);
    for (let i = 0; i < matrix.size * matrix.size; i++) {
      if (!alignment(i)) continue;
      const r = Math.floor(i / matrix.size);
      const x = layout.codeX + (i % matrix.size) * layout.moduleSize + Math.floor(layout.moduleSize / 2);
      const y = layout.codeY + r * layout.moduleSize + Math.floor(layout.moduleSize / 2);
      expect(repaired.image.data[y * image.width + x]).toBeLessThanOrEqual(limit);
    }
  });

  it("finds a finder drawn mid-grey on white wrong and darkens it until the Java port reads the code", () => {
    // Black data modules, finders' dark modules at 125 beside 240: the look of repaired art whose
    // finder rings stayed grey. Every local mean reads the rings dark; the hybrid binarizer's flat
    // blocks read them light and no finder is found.
    const { image, control } = greyCode(0, 240);
    const { layout, matrix } = control;
    const data = image.data.slice();
    for (let y = 0; y < image.height; y++) {
      for (let x = 0; x < image.width; x++) {
        const r = Math.floor((y - layout.codeY) / layout.moduleSize);
        const c = Math.floor((x - layout.codeX) / layout.moduleSize);
        if (r < 0 || c < 0 || r >= matrix.size || c >= matrix.size) continue;
        if (matrix.role[r * matrix.size + c] === ModuleRole.Finder && data[y * image.width + x]! < 128) data[y * image.width + x] = 125;
      }
    }
    const grey = rawImage(data, image.width, image.height, 1);
    // As drawn the port still finds the finders; under a phone's harsh exposure it does not.
    expect(javaPortReads(exposed(grey))).toBeUndefined();
    const geometry = { matrix, layout };
    expect(checkModules(grey, geometry).wrongFunction).toBeGreaterThan(0);
    const repaired = repairModules(grey, geometry);
    expect(repaired.after.wrong).toBe(0);
    expect(javaPortReads(exposed(repaired.image))).toBe(CONTENT);
    expect(javaPortReads(repaired.image)).toBe(CONTENT);
  });

  it('asks nothing more of a plain black-on-white code', () => {
    const { image, control } = greyCode(0, 255);
    expect(checkModules(image, { matrix: control.matrix, layout: control.layout }).wrong).toBe(0);
  });
});
