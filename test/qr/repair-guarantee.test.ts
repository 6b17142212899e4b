/**
 * ensureScannable: the codewords a first pass leaves to error correction, the capture family's
 * verdict as the judge (not the scan check alone), the trigger at on_failure, and the levels and
 * bounds of the request field qrRepair.
 */
import { describe, expect, it } from 'vitest';
import { rawImage } from '../../src/image/raw.ts';
import { toLuma } from '../../src/image/luma.ts';
import { codewordMap } from '../../src/qr/codewords.ts';
import { alignmentCentres } from '../../src/qr/encode.ts';
import { ensureScannable, needsRepair, readByAllEverywhere, SPARE_SHARE, sparedPassHolds, type QrGeometry } from '../../src/qr/guarantee.ts';
import { COUNT, MIN_READ } from '../../src/qr/robustness.ts';
import { checkModules, repairModules } from '../../src/qr/repair/index.ts';
import { zxingDecode } from '../../src/qr/decoders.ts';
import { zbarDecode } from '../helpers/independent-decoders.ts';
import { ssim } from './image-metrics.ts';
import { artLike, cleanCode, CONTENT, paintModule, readAfterCapture, type Fixture } from './repair-fixtures.ts';

describe('error correction keeps some of the art', () => {
  /** The clean code with every module of the given codewords painted the other colour; returns the painted matrix modules. */
  function paintCodewords(fixture: Fixture, codewords: readonly number[], modulesEach = 8): number[] {
    const { matrix } = fixture.geometry;
    const { codeword } = codewordMap(matrix);
    const painted: number[] = [];
    for (const cw of codewords) {
      const modules = [...codeword.keys()].filter((i) => codeword[i] === cw).slice(0, modulesEach);
      for (const i of modules) paintModule(fixture, Math.floor(i / matrix.size), i % matrix.size, matrix.dark[i] ? [250, 240, 200] : [20, 30, 120]);
      painted.push(...modules);
    }
    return painted;
  }

  /** Codewords with a module within 5 modules of the bottom-right alignment pattern's centre. */
  function codewordsNearAlignment(matrix: QrGeometry['matrix']): Set<number> {
    const { codeword } = codewordMap(matrix);
    const [ar, ac] = alignmentCentres(matrix.version).at(-1)!;
    const near = (i: number) => Math.max(Math.abs(Math.floor(i / matrix.size) - ar), Math.abs((i % matrix.size) - ac)) <= 5;
    return new Set([...codeword.keys()].filter((i) => codeword[i]! >= 0 && near(i)).map((i) => codeword[i]!));
  }

  /** Matrix modules whose cells the repair changed. */
  function changedModulesOf(mask: Uint8Array, geometry: QrGeometry): Set<number> {
    const { matrix, layout } = geometry;
    const q = layout.quietZoneModules;
    const side = matrix.size + 2 * q;
    const out = new Set<number>();
    mask.forEach((v, k) => {
      if (v) out.add((Math.floor(k / side) - q) * matrix.size + (k % side) - q);
    });
    return out;
  }

  it('leaves the codewords with the most failing modules as drawn, up to spareShare of what each block corrects, and the code reads', async () => {
    const fixture = cleanCode();
    const map = codewordMap(fixture.geometry.matrix);
    // Codewords away from the bottom-right alignment pattern, which are never spared (below).
    const nearAlignment = codewordsNearAlignment(fixture.geometry.matrix);
    const inBlock = (b: number) => [...map.block.keys()].filter((k) => map.block[k] === b && !nearAlignment.has(k));
    const budget = Math.floor(0.5 * map.correctable);
    expect(map.blocks).toBeGreaterThan(1);
    expect(budget).toBeGreaterThanOrEqual(2);
    // Block 0: more whole codewords wrong than the budget, and as many with one wrong module;
    // block 1: two codewords with one wrong module each.
    const whole = paintCodewords(fixture, inBlock(0).slice(0, budget + 2));
    const partly = paintCodewords(fixture, inBlock(0).slice(budget + 2, 2 * budget + 2), 1);
    const single = paintCodewords(fixture, inBlock(1).slice(0, 2), 1);
    expect(checkModules(fixture.image, fixture.geometry).wrong).toBe(whole.length + partly.length + single.length);

    const spared = repairModules(fixture.image, fixture.geometry, { spareShare: 0.5 });
    // Block 0 spends its budget on whole painted codewords; block 1 leaves its two as they are
    // (the paint also leaves some neighbours weak: those of spared codewords count too).
    expect(spared.after.wrong).toBe(0);
    expect(spared.after.spared).toBeGreaterThanOrEqual(budget * 8 + 2);
    const changed = changedModulesOf(spared.changedMask, fixture.geometry);
    expect(whole.filter((i) => changed.has(i))).toHaveLength(2 * 8);
    expect(partly.every((i) => changed.has(i))).toBe(true);
    expect(single.filter((i) => changed.has(i))).toHaveLength(0);
    // Within what the blocks correct: the decoders read it as it is and after held-out captures.
    expect(await zxingDecode(toLuma(spared.image))).toEqual([CONTENT]);
    expect(await zbarDecode(toLuma(spared.image))).toEqual([CONTENT]);
    for (const seed of [12, 13]) expect((await readAfterCapture(spared.image, fixture.geometry, seed)).zbar, `capture ${seed}`).toBe(true);

    // Without spareShare, every painted module is repaired.
    const full = repairModules(fixture.image, fixture.geometry);
    expect(full.after).toMatchObject({ wrong: 0, spared: 0 });
    const changedFull = changedModulesOf(full.changedMask, fixture.geometry);
    expect([...whole, ...partly, ...single].every((i) => changedFull.has(i))).toBe(true);
    expect(changedFull.size).toBeGreaterThan(changed.size);
  });

  it('never spares a codeword within reach of the bottom-right alignment pattern, where Java ZXing searches for it', () => {
    const fixture = cleanCode();
    const nearby = [...codewordsNearAlignment(fixture.geometry.matrix)];
    expect(nearby.length).toBeGreaterThan(2);
    const painted = paintCodewords(fixture, nearby);
    const spared = repairModules(fixture.image, fixture.geometry, { spareShare: 0.5 });
    // Whole codewords painted wrong are what sparing takes first; near the alignment pattern,
    // every one is repaired instead.
    expect(spared.after).toMatchObject({ wrong: 0, spared: 0 });
    const changed = changedModulesOf(spared.changedMask, fixture.geometry);
    expect(painted.every((i) => changed.has(i))).toBe(true);
  });

  it('at on_failure, a first pass that spares codewords is delivered when every family reads every capture and ZBar the extra ones; always repairs them all', async () => {
    const weak = artLike({ strength: 0.35, covered: 0.05, seed: 6 });
    const onFailure = await ensureScannable(weak.image, CONTENT, weak.geometry, 'on_failure', { codeSide: weak.codeSide });
    expect(onFailure).toMatchObject({ scannable: true, repaired: true, passes: 1 });
    expect(onFailure.modulesAfter?.spared).toBeGreaterThan(0);
    expect(onFailure.captures.byAll).toBe(COUNT);
    const { placement, moduleSize } = weak.geometry.layout;
    expect(await sparedPassHolds(onFailure.image, CONTENT, placement, { modules: placement.side / moduleSize })).toBe(true);
    const always = await ensureScannable(weak.image, CONTENT, weak.geometry, 'always', { codeSide: weak.codeSide });
    expect(always.modulesAfter?.spared).toBe(0);
    expect(onFailure.changedPixels).toBeLessThan(always.changedPixels);
    expect(ssim(weak.image, onFailure.image)).toBeGreaterThan(ssim(weak.image, always.image));
    for (const seed of [14, 15, 16]) expect((await readAfterCapture(onFailure.image, weak.geometry, seed)).zbar, `capture ${seed}`).toBe(true);
    expect(SPARE_SHARE).toBe(0.5);
  });
});

describe('ensureScannable judges by the capture family, not the scan check alone', () => {
  /** The plain code in two close greys: the scan check reads it, a phone's capture buries it. */
  const faintCode = (): Fixture => cleanCode(400, [118, 118, 118], [134, 134, 134]);

  it('reports a faint code not scannable at off, though the scan check reads it', async () => {
    const faint = faintCode();
    const result = await ensureScannable(faint.image, CONTENT, faint.geometry, 'off', { codeSide: faint.codeSide });
    expect(result.verdict.scannable).toBe(true);
    expect(result.scannable).toBe(false);
    expect(result.robustness).toBeLessThan(MIN_READ / COUNT);
  });

  it('repairs it at on_failure until the family reads it', async () => {
    const faint = faintCode();
    const result = await ensureScannable(faint.image, CONTENT, faint.geometry, 'on_failure', { codeSide: faint.codeSide });
    expect(result).toMatchObject({ scannable: true, repaired: true });
    expect(result.robustness).toBeGreaterThanOrEqual(MIN_READ / COUNT);
    for (const seed of [7, 8]) expect(await readAfterCapture(result.image, faint.geometry, seed), `capture ${seed}`).toEqual({ zbar: true, opencv: true });
  });
});

describe('at on_failure, the verdict with margin decides; weak modules alone do not', () => {
  /** The plain code in two mid greys. */
  const softCode = (): Fixture => cleanCode(400, [100, 100, 100], [165, 165, 165]);

  it("repairs a code every family reads in every capture when ZXing's hybrid binarizer would read its flat blocks wrong, and the referees read it", async () => {
    // Weak modules alone do not trigger a repair (needsRepair below), but a mid-grey code's flat
    // dark runs are taken for background by the hybrid binarizer under a phone's exposure: Java
    // ZXing then finds no finder pattern (docs/scan-repair.md). The check calls them wrong.
    const soft = softCode();
    expect(checkModules(soft.image, soft.geometry).wrong).toBeGreaterThan(0);
    const result = await ensureScannable(soft.image, CONTENT, soft.geometry, 'on_failure', { codeSide: soft.codeSide });
    expect(result).toMatchObject({ scannable: true, repaired: true });
    expect(result.modulesAfter?.wrong).toBe(0);
    for (const seed of [9, 10, 11]) expect(await readAfterCapture(result.image, soft.geometry, seed), `capture ${seed}`).toEqual({ zbar: true, opencv: true });
  });

  it('repairs the same code once a module reads wrong, though the family still reads it', async () => {
    const soft = softCode();
    paintModule(soft, 10, 12, soft.geometry.matrix.dark[10 * soft.geometry.matrix.size + 12] ? [165, 165, 165] : [100, 100, 100]);
    expect(checkModules(soft.image, soft.geometry).wrong).toBeGreaterThan(0);
    const result = await ensureScannable(soft.image, CONTENT, soft.geometry, 'on_failure', { codeSide: soft.codeSide });
    expect(result).toMatchObject({ scannable: true, repaired: true });
    expect(result.modulesAfter?.wrong).toBe(0);
  });

  it('needsRepair: a verdict that holds with a capture only one family read is not enough', () => {
    const captures = { share: 1, read: COUNT, captures: COUNT, byDecoder: { zxing: COUNT, zbar: COUNT, zxingjava: COUNT }, byAll: COUNT, complete: true, ms: 0 };
    const verdict = { scannable: true, scan: { scannable: true } as never, robustness: captures };
    const clean = { wrong: 0, weak: 500 } as never;
    expect(readByAllEverywhere(verdict)).toBe(true);
    expect(needsRepair(verdict, clean)).toBe(false);
    expect(needsRepair({ ...verdict, robustness: { ...captures, byAll: COUNT - 1, byDecoder: { zxing: COUNT - 1, zbar: COUNT, zxingjava: COUNT } } }, clean)).toBe(true);
    expect(needsRepair({ ...verdict, scannable: false }, clean)).toBe(true);
    expect(needsRepair(verdict, { wrong: 1, weak: 0 } as never)).toBe(true);
  });
});

describe('ensureScannable levels and bounds', () => {
  it('off delivers the image as generated with an honest verdict', async () => {
    const broken = artLike({ strength: 0.2, covered: 0.2, seed: 3 });
    const result = await ensureScannable(broken.image, CONTENT, broken.geometry, 'off', { codeSide: broken.codeSide });
    expect(result).toMatchObject({ scannable: false, repaired: false, passes: 0, changedPixels: 0 });
    expect(result.image).toBe(broken.image);
    // Off still judges the image over the whole family and says how much of it reads.
    expect(result.captures).toMatchObject({ captures: COUNT, complete: true });
    expect(result.robustness).toBeLessThan(MIN_READ / COUNT);
  });

  it('without geometry (a client code that could not be located) only checks', async () => {
    const broken = artLike({ strength: 0.2, covered: 0.2, seed: 3 });
    const result = await ensureScannable(broken.image, CONTENT, undefined, 'always', { codeSide: broken.codeSide });
    expect(result).toMatchObject({ scannable: false, repaired: false, passes: 0 });
    expect(result.image).toBe(broken.image);
  });

  it('stops after maxPasses when the code can never scan as the expected text', async () => {
    const fixture = artLike({ strength: 0.4, seed: 12 });
    const result = await ensureScannable(fixture.image, 'some other text', fixture.geometry, 'always', { codeSide: fixture.codeSide, maxPasses: 2 });
    expect(result.passes).toBe(2);
    expect(result.scannable).toBe(false);
    expect(result.verdict.otherContent).toBe(CONTENT);
    const none = await ensureScannable(fixture.image, CONTENT, fixture.geometry, 'always', { maxPasses: 0 });
    expect(none).toMatchObject({ passes: 0, repaired: false });
    expect(none.image).toBe(fixture.image);
  });

  it('never modifies the image it is given', async () => {
    const broken = artLike({ strength: 0.2, covered: 0.2, seed: 3 });
    const copy = Uint8Array.from(broken.image.data);
    const result = await ensureScannable(broken.image, CONTENT, broken.geometry, 'always', { codeSide: broken.codeSide });
    expect(result.repaired).toBe(true);
    expect(Buffer.compare(Buffer.from(copy), Buffer.from(broken.image.data))).toBe(0);
    expect(result.image.data).not.toBe(broken.image.data);
  });

  it('refuses an unknown level and a geometry that does not fit the image', async () => {
    const clean = cleanCode();
    await expect(ensureScannable(clean.image, CONTENT, clean.geometry, 'sometimes' as never)).rejects.toThrow(RangeError);
    const small = rawImage(new Uint8Array(100 * 100 * 3), 100, 100, 3);
    const { matrix, layout } = clean.geometry;
    await expect(ensureScannable(small, CONTENT, { matrix, layout }, 'always')).rejects.toThrow(/not inside/);
    await expect(ensureScannable(small, CONTENT, clean.geometry, 'always')).rejects.toThrow(/control image must be/);
  });
});
