/**
 * The scan bench's second capture model (scripts/bench/scan-whole-image.ts): the whole image
 * photographed with the code's placed square at 140-360 px and no floor on pixels per module.
 * Its figures are only worth reading if plain codes read in it where their modules are resolved,
 * and if its captures are seeded.
 */
import { describe, expect, it } from 'vitest';
import { plainCode } from '../helpers/plain-code.ts';
import { wholeImageReads } from '../../scripts/bench/scan-whole-image.ts';

const CONTENT = 'https://qr-art.example/p/whole';

describe("the scan bench's whole-image captures", () => {
  it('frame the code at 140-360 px and ZBar reads a plain code in each of them', async () => {
    const code = plainCode(CONTENT, { width: 576, height: 1024 });
    const reads = await wholeImageReads(code.image, CONTENT, code.placedSide, code.modules, 8, 11, undefined);
    expect(reads.zxingJava).toBeUndefined();
    for (const px of reads.pxPerModule) {
      expect(px * code.modules).toBeGreaterThanOrEqual(140);
      expect(px * code.modules).toBeLessThanOrEqual(360);
    }
    expect(reads.zbar).toEqual(Array(8).fill(true));
  });

  it('are seeded, and put a dense code under 4 px per module at their far end', async () => {
    const dense = plainCode(`${CONTENT}/${'x'.repeat(150)}`, { width: 768, height: 768 });
    const first = await wholeImageReads(dense.image, `${CONTENT}/${'x'.repeat(150)}`, dense.placedSide, dense.modules, 6, 5, undefined);
    const again = await wholeImageReads(dense.image, `${CONTENT}/${'x'.repeat(150)}`, dense.placedSide, dense.modules, 6, 5, undefined);
    expect(again).toEqual(first);
    expect(dense.modules).toBeGreaterThan(50);
    expect(Math.min(...first.pxPerModule)).toBeLessThan(4);
  });
});
