import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodeImage, encodePng, ImageDecodeError, readImageHeader, resizeImage, sniffImageFormat } from '../../src/image/decode.ts';
import { rawImage } from '../../src/image/raw.ts';
import { animatedGif, animatedWebp, handmadeGif, pixel, pngHeaderOnly, solid } from './fixtures.ts';

const MAX = 40_000_000;

describe('sniffImageFormat', () => {
  it('names PNG, JPEG, WebP and GIF by their magic bytes', async () => {
    const img = solid(4, 4, { r: 1, g: 2, b: 3 });
    expect(sniffImageFormat(await img.clone().png().toBuffer())).toBe('png');
    expect(sniffImageFormat(await img.clone().jpeg().toBuffer())).toBe('jpeg');
    expect(sniffImageFormat(await img.clone().webp().toBuffer())).toBe('webp');
    expect(sniffImageFormat(await img.clone().gif().toBuffer())).toBe('gif');
  });

  it('returns null for text, other formats, other RIFF files and too few bytes', async () => {
    expect(sniffImageFormat(Buffer.from('<html><body>not an image</body></html>'))).toBeNull();
    expect(sniffImageFormat(await solid(4, 4, { r: 1, g: 2, b: 3 }).tiff().toBuffer())).toBeNull();
    expect(sniffImageFormat(Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1'))).toBeNull();
    expect(sniffImageFormat(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeNull();
    expect(sniffImageFormat(new Uint8Array([0x89, 0x50, 0x4e]))).toBeNull();
    expect(sniffImageFormat(Buffer.from('RIFF\x10\x00', 'latin1'))).toBeNull();
    expect(sniffImageFormat(new Uint8Array(0))).toBeNull();
  });
});

describe('decodeImage', () => {
  it('decodes a PNG with alpha to 4 channels by default and flattens onto white for 3', async () => {
    const png = await solid(6, 5, { r: 255, g: 0, b: 0, alpha: 0 }, 4).png().toBuffer();
    const rgba = await decodeImage(png, { maxPixels: MAX });
    expect([rgba.width, rgba.height, rgba.channels]).toEqual([6, 5, 4]);
    expect(pixel(rgba, 0, 0)[3]).toBe(0);
    const rgb = await decodeImage(png, { maxPixels: MAX, channels: 3 });
    expect(rgb.channels).toBe(3);
    expect(pixel(rgb, 3, 2)).toEqual([255, 255, 255]);
  });

  it('decodes an opaque JPEG to 3 channels by default and adds opaque alpha for 4', async () => {
    const jpeg = await solid(9, 7, { r: 0, g: 0, b: 255 }).jpeg({ quality: 95 }).toBuffer();
    const rgb = await decodeImage(jpeg, { maxPixels: MAX });
    expect([rgb.width, rgb.height, rgb.channels]).toEqual([9, 7, 3]);
    const [r, g, b] = pixel(rgb, 4, 3);
    expect(r).toBeLessThan(10);
    expect(g).toBeLessThan(10);
    expect(b).toBeGreaterThan(245);
    const rgba = await decodeImage(jpeg, { maxPixels: MAX, channels: 4 });
    expect(pixel(rgba, 4, 3)[3]).toBe(255);
  });

  it('applies the EXIF orientation (a 40x20 JPEG tagged "rotate 90" decodes as 20x40)', async () => {
    const jpeg = await solid(40, 20, { r: 0, g: 128, b: 0 }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).toBe(6);
    const img = await decodeImage(jpeg, { maxPixels: MAX, channels: 3 });
    expect([img.width, img.height]).toEqual([20, 40]);
    await expect(readImageHeader(jpeg, MAX)).resolves.toMatchObject({ format: 'jpeg', width: 20, height: 40 });
  });

  it('turns greyscale and 16-bit PNGs into 8-bit sRGB', async () => {
    const grey = await encodePng(rawImage(new Uint8Array(16).fill(200), 4, 4, 1));
    expect((await sharp(grey).metadata()).channels).toBe(1);
    const g = await decodeImage(grey, { maxPixels: MAX });
    expect(g.channels).toBe(3);
    expect(pixel(g, 1, 1)).toEqual([200, 200, 200]);

    const deep = await solid(4, 4, { r: 255, g: 128, b: 0 }).toColourspace('rgb16').png().toBuffer();
    expect((await sharp(deep).metadata()).depth).toBe('ushort');
    const d = await decodeImage(deep, { maxPixels: MAX, channels: 3 });
    expect(d.data.length).toBe(4 * 4 * 3);
    expect(pixel(d, 0, 0)).toEqual([255, 128, 0]);
  });

  it('decodes WebP and only the first frame of animated GIF/WebP', async () => {
    const webp = await solid(12, 8, { r: 0, g: 255, b: 0 }).webp({ lossless: true }).toBuffer();
    expect(pixel(await decodeImage(webp, { maxPixels: MAX, channels: 3 }), 5, 5)).toEqual([0, 255, 0]);

    const gif = await animatedGif();
    expect((await readImageHeader(gif, MAX)).pages).toBe(2);
    const g = await decodeImage(gif, { maxPixels: MAX, channels: 3 });
    expect([g.width, g.height]).toEqual([20, 10]); // one frame, not a 20x20 strip
    expect(pixel(g, 10, 5)).toEqual([255, 0, 0]);

    const w = await decodeImage(await animatedWebp(), { maxPixels: MAX, channels: 3 });
    expect([w.width, w.height]).toEqual([16, 16]);
    expect(pixel(w, 8, 8)).toEqual([255, 0, 0]);
  });

  it('refuses more than maxPixels, naming the size and the limit', async () => {
    const png = await solid(100, 100, { r: 0, g: 0, b: 0 }).png().toBuffer();
    await expect(decodeImage(png, { maxPixels: 100 * 100 })).resolves.toBeTruthy();
    const p = decodeImage(png, { maxPixels: 5_000 });
    await expect(p).rejects.toBeInstanceOf(ImageDecodeError);
    await expect(p).rejects.toMatchObject({
      code: 'too_many_pixels',
      message: 'is too large: 100 x 100 pixels (10000 pixels); the limit is 5000 pixels',
    });
  });

  it('refuses a 50,000 x 50,000 PNG header quickly, without allocating its pixels', async () => {
    const bomb = pngHeaderOnly(50_000, 50_000);
    expect(bomb.length).toBeLessThan(100);
    const t0 = performance.now();
    await expect(decodeImage(bomb, { maxPixels: MAX })).rejects.toMatchObject({
      code: 'too_many_pixels',
      message: 'is too large: 50000 x 50000 pixels (2500 megapixels); the limit is 40 megapixels',
    });
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('GIF bombs are refused or decoded within the limit', async () => {
    // A 65535 x 65535 frame: refused from the header.
    const hugeFrame = handmadeGif({ screenW: 65535, screenH: 65535, frameW: 65535, frameH: 65535 });
    await expect(decodeImage(hugeFrame, { maxPixels: MAX })).rejects.toMatchObject({ code: 'too_many_pixels' });
    // A 1x1 frame far into a 10000 x 10000 canvas: the canvas counts.
    const farFrame = handmadeGif({ screenW: 10_000, screenH: 10_000, frameW: 1, frameH: 1, x: 9_999, y: 9_999 });
    await expect(decodeImage(farFrame, { maxPixels: MAX })).rejects.toMatchObject({ code: 'too_many_pixels' });
    // A huge logical screen around a 1x1 frame: whatever canvas the decoder settles on stays in bounds.
    const hugeScreen = handmadeGif({ screenW: 65535, screenH: 65535, frameW: 1, frameH: 1 });
    const outcome = await decodeImage(hugeScreen, { maxPixels: MAX }).then(
      (img) => img.width * img.height,
      (err: ImageDecodeError) => err.code,
    );
    expect(outcome === 'too_many_pixels' || (typeof outcome === 'number' && outcome <= MAX)).toBe(true);
    // 5,000 frames: only the first is decoded.
    const manyFrames = handmadeGif({ screenW: 100, screenH: 100, frameW: 100, frameH: 100, frames: 5_000 });
    const t0 = performance.now();
    expect((await readImageHeader(manyFrames, MAX)).pages).toBe(5_000);
    const img = await decodeImage(manyFrames, { maxPixels: MAX });
    expect([img.width, img.height]).toEqual([100, 100]);
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('refuses an animated WebP with a 16383 x 16383 canvas', async () => {
    const bomb = await animatedWebp(16_383);
    expect(bomb.length).toBeLessThan(1000);
    await expect(decodeImage(bomb, { maxPixels: MAX })).rejects.toMatchObject({ code: 'too_many_pixels' });
  });

  it('reports a truncated PNG as a clear error rather than a crash or half an image', async () => {
    const png = await solid(64, 64, { r: 255, g: 0, b: 0 }).png({ compressionLevel: 0 }).toBuffer();
    const cut = png.subarray(0, Math.floor(png.length / 2));
    const p = decodeImage(cut, { maxPixels: MAX });
    await expect(p).rejects.toBeInstanceOf(ImageDecodeError);
    await expect(p).rejects.toMatchObject({
      code: 'corrupt_image',
      message: expect.stringMatching(/^could not be decoded: the PNG data is truncated or damaged/),
    });
    // Cut inside the header: not even the size is readable.
    await expect(decodeImage(png.subarray(0, 20), { maxPixels: MAX })).rejects.toMatchObject({
      code: 'not_an_image',
      message: 'is not a readable PNG image (its header is damaged)',
    });
  });

  it('reads a JPEG with stray bytes before a marker (phones write them; browsers show it) as the picture it is, and still refuses one cut short', async () => {
    // Noise: the scan data is most of the file, so a cut at 60% lands in it, past the headers.
    const noise = Buffer.from(Array.from({ length: 64 * 48 * 3 }, (_, i) => (i * 2654435761) >>> 24));
    const jpeg = await sharp(noise, { raw: { width: 64, height: 48, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
    const dht = jpeg.indexOf(Buffer.from([0xff, 0xc4]));
    expect(dht).toBeGreaterThan(0);
    const stray = Buffer.concat([jpeg.subarray(0, dht), Buffer.from([0x00, 0x01, 0x02]), jpeg.subarray(dht)]);
    const [clean, read] = await Promise.all([decodeImage(jpeg, { maxPixels: MAX }), decodeImage(stray, { maxPixels: MAX })]);
    expect([read.width, read.height]).toEqual([64, 48]);
    expect(Buffer.from(read.data).equals(Buffer.from(clean.data))).toBe(true);
    // Refused: cut short; cut in the middle of its scan data but ending with its end marker (a
    // libjpeg warning only, decoded it would be half grey); and that with stray bytes too, which
    // libjpeg reports first.
    const scan = jpeg.indexOf(Buffer.from([0xff, 0xda]));
    const middleCut = (file: Buffer, at: number) => Buffer.concat([file.subarray(0, at + Math.floor((jpeg.length - scan) / 2)), Buffer.from([0xff, 0xd9])]);
    for (const damaged of [jpeg.subarray(0, Math.floor(jpeg.length * 0.6)), middleCut(jpeg, scan), middleCut(stray, stray.indexOf(Buffer.from([0xff, 0xda])))]) {
      await expect(decodeImage(damaged, { maxPixels: MAX })).rejects.toMatchObject({
        code: 'corrupt_image',
        message: expect.stringMatching(/^could not be decoded: the JPEG data is truncated or damaged/),
      });
    }
  });

  it('refuses text, even when it would be named .png', async () => {
    await expect(decodeImage(Buffer.from('hello, I am a text file\n'), { maxPixels: MAX })).rejects.toMatchObject({
      code: 'not_an_image',
      message: 'is not a PNG, JPEG, WebP or GIF image (its content does not start like one of these formats)',
    });
  });

  it('refuses formats sharp could read but we do not accept (TIFF, SVG)', async () => {
    const tiff = await solid(4, 4, { r: 1, g: 2, b: 3 }).tiff().toBuffer();
    await expect(decodeImage(tiff, { maxPixels: MAX })).rejects.toMatchObject({ code: 'not_an_image' });
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
    await expect(decodeImage(svg, { maxPixels: MAX })).rejects.toMatchObject({ code: 'not_an_image' });
  });
});

describe('resizeImage', () => {
  const red = { r: 255, g: 0, b: 0 };

  async function halfRedHalfBlue(): Promise<ReturnType<typeof rawImage>> {
    // 100 x 50: left 50 columns red, right 50 blue.
    const data = new Uint8Array(100 * 50 * 3);
    for (let y = 0; y < 50; y++) {
      for (let x = 0; x < 100; x++) data.set(x < 50 ? [255, 0, 0] : [0, 0, 255], (y * 100 + x) * 3);
    }
    return rawImage(data, 100, 50, 3);
  }

  it("'contain' letterboxes with the background (white by default)", async () => {
    const img = rawImage(new Uint8Array(100 * 50 * 3).fill(0), 100, 50, 3);
    const out = await resizeImage(img, 100, 100, 'contain');
    expect([out.width, out.height, out.channels]).toEqual([100, 100, 3]);
    expect(pixel(out, 50, 5)).toEqual([255, 255, 255]);
    expect(pixel(out, 50, 50)).toEqual([0, 0, 0]);
    expect(pixel(out, 50, 95)).toEqual([255, 255, 255]);
    const coloured = await resizeImage(img, 100, 100, 'contain', red);
    expect(pixel(coloured, 50, 5)).toEqual([255, 0, 0]);
  });

  it("'cover' crops the centre and 'fill' stretches", async () => {
    const img = await halfRedHalfBlue();
    const cover = await resizeImage(img, 50, 50, 'cover');
    expect([cover.width, cover.height]).toEqual([50, 50]);
    expect(pixel(cover, 2, 25)).toEqual([255, 0, 0]); // centre crop keeps columns 25..74
    expect(pixel(cover, 47, 25)).toEqual([0, 0, 255]);
    const fill = await resizeImage(img, 20, 80, 'fill');
    expect([fill.width, fill.height]).toEqual([20, 80]);
    expect(pixel(fill, 2, 2)).toEqual([255, 0, 0]);
    expect(pixel(fill, 17, 77)).toEqual([0, 0, 255]);
  });

  it('keeps 1, 3 and 4 channels', async () => {
    for (const channels of [1, 3, 4] as const) {
      // Opaque: a translucent alpha would round colours through premultiplication.
      const data = new Uint8Array(10 * 10 * channels).map((_, i) => (channels === 4 && i % 4 === 3 ? 255 : 128));
      const img = rawImage(data, 10, 10, channels);
      const out = await resizeImage(img, 30, 20, 'contain');
      expect([out.width, out.height, out.channels, out.data.length]).toEqual([30, 20, channels, 30 * 20 * channels]);
      expect(pixel(out, 15, 10)[0]).toBe(128);
      expect(pixel(out, 1, 10)[0]).toBe(255); // letterbox
      if (channels === 4) expect(pixel(out, 1, 10)[3]).toBe(255); // opaque letterbox
    }
  });

  it('refuses a non-integer or empty target size', async () => {
    const img = rawImage(new Uint8Array(3), 1, 1, 3);
    await expect(resizeImage(img, 0, 10, 'fill')).rejects.toThrow(RangeError);
    await expect(resizeImage(img, 10.5, 10, 'fill')).rejects.toThrow(RangeError);
  });
});

describe('encodePng', () => {
  it('round-trips pixels through PNG for 1, 3 and 4 channels', async () => {
    for (const channels of [1, 3, 4] as const) {
      const data = new Uint8Array(7 * 5 * channels).map((_, i) => (i * 37) % 256);
      const img = rawImage(data, 7, 5, channels);
      const png = await encodePng(img);
      expect(sniffImageFormat(png)).toBe('png');
      const meta = await sharp(png).metadata();
      expect([meta.width, meta.height, meta.channels]).toEqual([7, 5, channels]);
      // sharp hands grey back as RGB; its first channel is the grey value.
      const reader = channels === 1 ? sharp(png).extractChannel(0) : sharp(png);
      const back = await reader.raw().toBuffer({ resolveWithObject: true });
      expect(Buffer.compare(back.data, Buffer.from(data))).toBe(0);
    }
  });
});
