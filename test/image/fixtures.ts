/** Image fixtures built in memory for the image tests (hostile ones by hand, byte by byte). */
import zlib from 'node:zlib';
import sharp from 'sharp';

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body) >>> 0);
  return Buffer.concat([length, body, crc]);
}

/** A valid-looking 8-bit RGB PNG header claiming width x height, with a token IDAT: ~70 bytes. */
export function pngHeaderOnly(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', zlib.deflateSync(Buffer.alloc(16))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A GIF89a with a 2-colour palette and `frames` frames of frameW x frameH at (x, y), each with
 * one LZW-coded pixel (decoders pad the rest).
 */
export function handmadeGif(o: { screenW: number; screenH: number; frameW: number; frameH: number; x?: number; y?: number; frames?: number }): Buffer {
  const parts: Buffer[] = [Buffer.from('GIF89a', 'latin1')];
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(o.screenW, 0);
  screen.writeUInt16LE(o.screenH, 2);
  screen[4] = 0x80; // global colour table of 2 entries
  parts.push(screen, Buffer.from([0, 0, 0, 255, 255, 255]));
  for (let i = 0; i < (o.frames ?? 1); i++) {
    parts.push(Buffer.from([0x21, 0xf9, 4, 0, 1, 0, 0, 0])); // graphic control: 10 ms delay
    const desc = Buffer.alloc(10);
    desc[0] = 0x2c;
    desc.writeUInt16LE(o.x ?? 0, 1);
    desc.writeUInt16LE(o.y ?? 0, 3);
    desc.writeUInt16LE(o.frameW, 5);
    desc.writeUInt16LE(o.frameH, 7);
    parts.push(desc, Buffer.from([2, 2, 0x4c, 0x01, 0])); // min code size 2, one data sub-block
  }
  parts.push(Buffer.from([0x3b]));
  return Buffer.concat(parts);
}

export function solid(width: number, height: number, colour: { r: number; g: number; b: number; alpha?: number }, channels: 3 | 4 = 3) {
  return sharp({ create: { width, height, channels, background: colour } });
}

/** A 2-frame animated WebP whose VP8X canvas is then rewritten to canvas x canvas. */
export async function animatedWebp(canvas?: number): Promise<Buffer> {
  const a = await solid(16, 16, { r: 255, g: 0, b: 0 }).png().toBuffer();
  const b = await solid(16, 16, { r: 0, g: 0, b: 255 }).png().toBuffer();
  const webp = await sharp([a, b], { join: { animated: true } }).webp({ lossless: true }).toBuffer();
  if (canvas === undefined) return webp;
  const at = webp.indexOf('VP8X');
  if (at < 0) throw new Error('no VP8X chunk');
  const patched = Buffer.from(webp);
  patched.writeUIntLE(canvas - 1, at + 12, 3);
  patched.writeUIntLE(canvas - 1, at + 15, 3);
  return patched;
}

export async function animatedGif(): Promise<Buffer> {
  const a = await solid(20, 10, { r: 255, g: 0, b: 0 }).png().toBuffer();
  const b = await solid(20, 10, { r: 0, g: 0, b: 255 }).png().toBuffer();
  return sharp([a, b], { join: { animated: true } }).gif().toBuffer();
}

/** Pixel at (x, y) of a decoded image as an array of its channels. */
export function pixel(img: { data: Uint8Array; width: number; channels: number }, x: number, y: number): number[] {
  const at = (y * img.width + x) * img.channels;
  return Array.from(img.data.subarray(at, at + img.channels));
}
