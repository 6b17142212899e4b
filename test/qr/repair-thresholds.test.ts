/**
 * The repair's thresholds beyond ZXing's: ZBar's wide binarizer window, and the far read (a phone
 * framing the whole image, 2-3 px per module for a dense code), each checked against ZBar's reads
 * of simulated photos.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { toLuma } from '../../src/image/luma.ts';
import { codewordMap } from '../../src/qr/codewords.ts';
import { ModuleRole } from '../../src/qr/encode.ts';
import { familyParams, simulateCapture } from '../../src/qr/capture-family.ts';
import { ensureScannable, passOptions, SPARE_SHARE, spareShareFor, type QrGeometry } from '../../src/qr/guarantee.ts';
import { CHECK_SEED } from '../../src/qr/robustness.ts';
import { checkModules, DEFAULT_REPAIR_OPTIONS, farReadSigma, repairModules } from '../../src/qr/repair/index.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { zbarDecode } from '../helpers/independent-decoders.ts';
import { artLike, cleanCode, CONTENT, exactly, inDot, shadedCode, type Fixture } from './repair-fixtures.ts';

describe("ZBar's wide binarizer window", () => {
  /**
   * Light art with small dark dots for dark modules (a dot pattern's look: the code's mean is
   * light), every alignment pattern's light ring painted `ring`.
   */
  function dotsWithGreyAlignmentRings(ring: number): Fixture {
    const { image, control } = shadedCode(CONTENT, 's1', 640, 240, (matrix) => (i, dx, dy, m) => {
      const role = matrix.role[i]!;
      if (matrix.dark[i] && (role !== ModuleRole.Data || inDot(dx, dy, m, 0.25))) return 0;
      return !matrix.dark[i] && role === ModuleRole.Alignment ? ring : undefined;
    });
    return { image, geometry: { matrix: control.matrix, layout: control.layout }, codeSide: control.layout.codePixels };
  }

  /** Read value at each alignment light-ring module's centre, and the mean of the box `modules` wide around it. */
  function ringsAgainstBox(image: RawImage, geometry: QrGeometry, modules: number): Array<{ centre: number; box: number }> {
    const { matrix, layout } = geometry;
    const luma = toLuma(image);
    const m = layout.moduleSize;
    const half = Math.round((modules * m) / 2);
    const out: Array<{ centre: number; box: number }> = [];
    for (let i = 0; i < matrix.size * matrix.size; i++) {
      if (matrix.role[i] !== ModuleRole.Alignment || matrix.dark[i]) continue;
      const cx = layout.codeX + (i % matrix.size) * m + Math.floor(m / 2);
      const cy = layout.codeY + Math.floor(i / matrix.size) * m + Math.floor(m / 2);
      let sum = 0;
      for (let y = cy - half; y < cy + half; y++) for (let x = cx - half; x < cx + half; x++) sum += luma.data[y * luma.width + x]!;
      out.push({ centre: luma.data[cy * luma.width + cx]!, box: sum / (4 * half * half) });
    }
    return out;
  }

  /** Of `count` captures from the family (a seed the check never uses), how many ZBar reads. */
  async function zbarReads(image: RawImage, geometry: QrGeometry, count: number): Promise<number> {
    const { placement, moduleSize } = geometry.layout;
    const seed = 777;
    expect(seed).not.toBe(CHECK_SEED);
    let reads = 0;
    for (const [k, params] of familyParams(seed, count, { modules: placement.side / moduleSize }).entries()) {
      const capture = await simulateCapture(image, placement, params, seed + k);
      if (exactly(await zbarDecode(capture.image))) reads++;
    }
    return reads;
  }

  it("finds a light module wrong when it is light only beside its dark neighbours, not against ZBar's wide mean, and lifts it", async () => {
    // ZBar thresholds each pixel against the mean of a box an eighth of the frame wide or more
    // (about 5 to 20 modules over the capture family); in light art an alignment pattern's grey
    // ring reads dark there, though every window of ZXing's size, most of it dark, reads it light.
    const grey = dotsWithGreyAlignmentRings(175);
    const before = ringsAgainstBox(grey.image, grey.geometry, 12);
    expect(before.length).toBeGreaterThan(0);
    expect(before.every(({ centre, box }) => centre < box)).toBe(true);
    expect(ringsAgainstBox(grey.image, grey.geometry, 5).every(({ centre, box }) => centre > box)).toBe(true);
    expect(checkModules(grey.image, grey.geometry).wrongFunction).toBeGreaterThan(0);
    const repaired = repairModules(grey.image, grey.geometry);
    expect(repaired.after.wrong).toBe(0);
    expect(ringsAgainstBox(repaired.image, grey.geometry, 12).every(({ centre, box }) => centre > box)).toBe(true);
    // ZBar itself misses some captures of the grey rings (its alignment search fails) and none
    // once they are lifted.
    expect(await zbarReads(grey.image, grey.geometry, 40)).toBeLessThan(40);
    expect(await zbarReads(repaired.image, grey.geometry, 40)).toBe(40);
    // The same rings drawn light are right as they are.
    expect(checkModules(dotsWithGreyAlignmentRings(240).image, grey.geometry).wrongFunction).toBe(0);
  });
});

describe('the far read', () => {
  const LONG = `${CONTENT}?utm_source=far&utm_medium=print&utm_campaign=posters-2026&ref=abcdefghijklmnopqrstuvwxyz0123456789`;

  /** Light art (230) with the d2 pattern's small dots for dark data modules, painted `dot`; function patterns black. */
  function greyDots(dot: number): Fixture & { plain: RawImage } {
    const { image, control } = shadedCode(LONG, 'd2', 720, 230, (matrix) => (i, dx, dy, m) => {
      if (!matrix.dark[i]) return undefined;
      return matrix.role[i] !== ModuleRole.Data ? 0 : inDot(dx, dy, m, 0.31) ? dot : undefined;
    });
    const { matrix, layout } = control;
    return { image, geometry: { matrix, layout, control: control.image }, codeSide: layout.codePixels, plain: control.image };
  }

  /** Far photos: how many, px per module of the first and the step to the next, contrast, JPEG quality. */
  const FAR_SHOTS = { photos: 12, from: 2.2, step: 0.1, contrast: 0.8, quality: 75 };

  /**
   * How many far photos ZBar reads: the whole image scaled so a module spans 2.2 to 3.3 px (by
   * default; below the capture family's 5), turned a few degrees, blurred, contrast 0.8, JPEG 75.
   * Written with sharp, apart from the family and from the check's model.
   */
  async function farReads(image: RawImage, geometry: QrGeometry, shots = FAR_SHOTS): Promise<number> {
    const { placement, moduleSize } = geometry.layout;
    expect(placement.side / moduleSize).toBeGreaterThan(60);
    const random = mulberry32(4242);
    let reads = 0;
    for (let k = 0; k < shots.photos; k++) {
      const width = Math.round((image.width * (shots.from + shots.step * k)) / moduleSize);
      expect(width / image.width).toBeLessThan(5 / moduleSize);
      const turned = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels as 1 | 3 } })
        .resize(width, width)
        .rotate((random() * 2 - 1) * 6, { background: '#808080' })
        .png()
        .toBuffer();
      const photo = await sharp(turned).blur(0.6 + 0.4 * random()).greyscale().linear(shots.contrast, (1 - shots.contrast) * 128).jpeg({ quality: shots.quality }).toBuffer();
      const { data, info } = await sharp(photo).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
      const texts = await zbarDecode(rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, 1));
      if (texts.length > 0 && texts.every((t) => t === LONG)) reads++;
    }
    return reads;
  }

  it('leaves the choice of codewords spared to error correction to the near checks', () => {
    // Grey square modules (120 on 230) read right up close but short from far where a dark module
    // stands among light ones; in the first block, codewords up to half what it corrects have 3
    // modules painted the other colour.
    const { image, control } = shadedCode(LONG, 's1', 720, 230, (matrix) => {
      const { codeword, block, correctable } = codewordMap(matrix);
      const painted = new Set<number>();
      for (const cw of [...block.keys()].filter((k) => block[k] === 0).slice(5, 5 + Math.floor(0.5 * correctable))) {
        for (const i of [...codeword.keys()].filter((j) => codeword[j] === cw).slice(0, 3)) painted.add(i);
      }
      return (i) => (painted.has(i) ? (matrix.dark[i] ? 230 : 0) : matrix.dark[i] ? 120 : undefined);
    });
    const geometry = { matrix: control.matrix, layout: control.layout, control: control.image };
    const nearOnly = repairModules(image, geometry, { spareShare: 0.5, farBlur: 0 });
    const withFar = repairModules(image, geometry, { spareShare: 0.5 });
    expect(checkModules(image, geometry).weak).toBeGreaterThan(10 * checkModules(image, geometry, { farBlur: 0 }).weak);
    expect(nearOnly.after.spared).toBeGreaterThan(0);
    // The same codewords are spared (their far-short modules count as spared too); counted with
    // the far read, the codewords richest in far-short modules were spared instead: 200 modules.
    expect(withFar.after.spared).toBeLessThan(2 * nearOnly.after.spared);
    expect(withFar.after.wrong).toBe(0);
  });

  it('holds the far read 20 levels clear of its threshold where a plain code clears it by twice that', async () => {
    // 24 far photos from 2.0 px per module: ZBar reads the plain control image in 18. With the
    // far read's margin at 10 levels, JPEG and the contrast loss leave the darkened dots too
    // close to their threshold (17 reads); at 20, 21.
    const art = greyDots(170);
    const shots = { ...FAR_SHOTS, photos: 24, from: 2.0, step: 0.05 };
    const narrow = await farReads(repairModules(art.image, art.geometry, { farMargin: 10 }).image, art.geometry, shots);
    const kept = await farReads(repairModules(art.image, art.geometry).image, art.geometry, shots);
    expect(kept).toBeGreaterThanOrEqual(narrow + 3);
    expect(kept).toBeGreaterThanOrEqual(await farReads(art.plain, art.geometry, shots));
  });

  it('asks no module to clear its far threshold by more than half of what a plain code clears it by there', () => {
    // Navy on cream: about 0.8 of black on white's contrast.
    const clean = cleanCode();
    expect(checkModules(clean.image, clean.geometry, { farMargin: 60 })).toMatchObject({ wrong: 0, weak: 0 });
  });

  it('blurs a dense code by about half a module and a sparse one by a fifth, at the far side', () => {
    expect(farReadSigma(DEFAULT_REPAIR_OPTIONS, 65)).toBeCloseTo(0.48, 2);
    expect(farReadSigma(DEFAULT_REPAIR_OPTIONS, 29)).toBeCloseTo(0.22, 2);
    expect(farReadSigma({ ...DEFAULT_REPAIR_OPTIONS, farBlur: 0 }, 65)).toBe(0);
  });

  it('darkens dots that read dark up close but grey from far, until ZBar reads far photos nearly as often as of the plain code', async () => {
    // Grey dots read dark against ZXing's windows at the family's 5 px per module and more, so
    // the near model alone leaves them grey; a photo at 2-3 px per module averages each dot with
    // the light around it. Phones still read the plain control image there.
    const art = greyDots(140);
    const plain = await farReads(art.plain, art.geometry);
    expect(plain).toBeGreaterThanOrEqual(10);
    expect(await farReads(art.image, art.geometry)).toBeLessThan(plain);
    const nearOnly = repairModules(art.image, art.geometry, { farBlur: 0 });
    const withFar = repairModules(art.image, art.geometry);
    expect(withFar.after.wrong).toBe(0);
    const [nearReads, farRepairedReads] = [await farReads(nearOnly.image, art.geometry), await farReads(withFar.image, art.geometry)];
    expect(nearReads).toBeLessThan(plain - 1);
    expect(farRepairedReads).toBeGreaterThanOrEqual(Math.max(plain - 1, nearReads + 2));
  });

  it('repairs a code too dense for a far photo whole from the first pass at on_failure: ZBar reads more far photos than of a pass that spares codewords', async () => {
    // Three version-10 art codes, 24 far photos each at 2-3 px per module. The spared codewords,
    // misread there with the rest, leave error correction too little: ZBar read 61 photos of the
    // sparing passes, 71 of the whole repairs, 60 of the plain control images.
    expect(spareShareFor(29)).toBe(SPARE_SHARE); // a version-2 code (25 modules and its quiet zone) is still spared
    const shots = { ...FAR_SHOTS, photos: 24, from: 2.0, step: 0.05 };
    let whole = 0;
    let spared = 0;
    for (const seed of [6, 7, 8]) {
      const dense = artLike({ content: LONG, size: 720, strength: 0.3, covered: 0.05, seed });
      const { placement, moduleSize } = dense.geometry.layout;
      const modules = placement.side / moduleSize;
      expect(spareShareFor(modules)).toBe(0);
      const result = await ensureScannable(dense.image, LONG, dense.geometry, 'on_failure', { codeSide: dense.codeSide });
      expect(result).toMatchObject({ scannable: true, repaired: true });
      expect(result.modulesAfter?.spared).toBe(0);
      const sparing = repairModules(dense.image, dense.geometry, { ...passOptions(1, 'on_failure', modules), spareShare: SPARE_SHARE });
      expect(sparing.after.spared).toBeGreaterThan(0);
      whole += await farReads(result.image, dense.geometry, shots);
      spared += await farReads(sparing.image, dense.geometry, shots);
    }
    expect(whole).toBeGreaterThanOrEqual(spared + 6);
  });
});
