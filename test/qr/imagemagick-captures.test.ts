/**
 * The scan bench's third capture model (scripts/bench/scan-imagemagick.ts): photos made by
 * ImageMagick and read by Debian's zbarimg. Like the whole-image model, its figures are only
 * worth reading if plain codes read in it where their modules are resolved, and if its captures
 * are seeded. Needs `apt-get install imagemagick zbar-tools` (.ci/run installs them).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainCode } from '../helpers/plain-code.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { imageMagickCapture, imageMagickModelAvailable, imageMagickReads, pngOf } from '../../scripts/bench/scan-imagemagick.ts';

const CONTENT = 'https://qr-art.example/p/magick';
const available = imageMagickModelAvailable();

describe.skipIf(!available)("the scan bench's ImageMagick captures", () => {
  it('frame the code at 140-360 px, add up to ~8 levels of noise, and zbarimg reads a plain code in each', async () => {
    const code = plainCode(CONTENT, { width: 576, height: 1024 });
    const reads = await imageMagickReads(code.image, CONTENT, code.placedSide, code.modules, 6, 11, undefined);
    expect(reads.zxingJava).toBeUndefined();
    for (const px of reads.pxPerModule) {
      expect(px * code.modules).toBeGreaterThanOrEqual(140);
      expect(px * code.modules).toBeLessThanOrEqual(360);
    }
    for (const noise of reads.noiseLuma) {
      expect(noise).toBeGreaterThan(1);
      expect(noise).toBeLessThan(8.1);
    }
    expect(reads.zbarimg).toEqual(Array(6).fill(true));
  });

  it('are seeded: the same image and seed give the same photo, byte for byte, and another seed another', async () => {
    const code = plainCode(CONTENT, { width: 640, height: 640 });
    const png = await pngOf(code.image);
    const dir = await mkdtemp(join(tmpdir(), 'magick-test-'));
    const shoot = async (seed: number, name: string) => {
      await imageMagickCapture(png, code.image, code.placedSide, code.modules, mulberry32(seed), join(dir, name));
      return readFile(join(dir, name));
    };
    try {
      const first = await shoot(5, 'a.jpg');
      expect((await shoot(5, 'b.jpg')).equals(first)).toBe(true);
      expect((await shoot(6, 'c.jpg')).equals(first)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('read nothing from an image without a code', async () => {
    const code = plainCode(CONTENT, { width: 512, height: 512 });
    const blank = { ...code.image, data: new Uint8Array(code.image.data.length).fill(200) };
    const reads = await imageMagickReads(blank, CONTENT, code.placedSide, code.modules, 2, 3, undefined);
    expect(reads.zbarimg).toEqual([false, false]);
  });
});
