/**
 * A second capture model for `npm run bench -- scan`, written apart from the capture family
 * (src/qr/capture-family.ts) and sharing none of its code: the whole image photographed, as the
 * issue's first measurement did it. sharp scales the whole image so the code's placed square
 * spans 140-360 px, rotates it by up to 8 degrees (mid-grey beyond its edges), blurs it (sigma
 * 0.4-1.2), lowers its contrast to 0.7-0.9 around mid-grey with an exposure shift of up to 15
 * levels, and JPEG-compresses it at quality 60-85. There is no floor on pixels per module (the
 * family lifts a dense code's near end to 5): a version-10 code gets captures at 2-6 px per
 * module, where plain codes stop reading too, so the figures are split by pixels per module.
 * The frame is the whole image, so ZBar's box window, an eighth of the frame, is not the
 * family's either. Decoded by ZBar and, where installed, Java ZXing.
 */
import sharp from 'sharp';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { zbarDecode } from '../../test/helpers/independent-decoders.ts';
import type { ZxingJavaReferee } from './zxing-java.ts';

/** Per whole-image capture of one image: its pixels per module and what each referee read. */
export interface WholeImageReads {
  readonly pxPerModule: number[];
  readonly zbar: boolean[];
  readonly zxingJava?: boolean[];
}

/** One capture of the whole image, the code's placed square (`placedSide` source px) at 140-360 px. */
async function capture(image: RawImage, placedSide: number, random: () => number): Promise<{ image: RawImage; scale: number }> {
  const scale = (140 + random() * 220) / placedSide;
  const angle = (random() * 2 - 1) * 8;
  const sigma = 0.4 + random() * 0.8;
  const contrast = 0.7 + random() * 0.2;
  const shift = (random() * 2 - 1) * 15;
  const quality = Math.round(60 + random() * 25);
  const raw = { raw: { width: image.width, height: image.height, channels: image.channels as 1 | 3 } };
  const scaled = await sharp(image.data, raw)
    .resize(Math.max(16, Math.round(image.width * scale)), Math.max(16, Math.round(image.height * scale)))
    .png()
    .toBuffer();
  const rotated = await sharp(scaled).rotate(angle, { background: { r: 128, g: 128, b: 128 } }).png().toBuffer();
  const jpeg = await sharp(rotated).blur(sigma).greyscale().linear(contrast, (1 - contrast) * 128 + shift).jpeg({ quality }).toBuffer();
  const { data, info } = await sharp(jpeg).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
  return { image: rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, 1), scale };
}

/** `count` whole-image captures of `image` (seeded), each read by ZBar and Java ZXing. */
export async function wholeImageReads(image: RawImage, expected: string, placedSide: number, modules: number, count: number, seed: number, java: ZxingJavaReferee | undefined): Promise<WholeImageReads> {
  const random = mulberry32(seed);
  const out = { pxPerModule: [] as number[], zbar: [] as boolean[], ...(java ? { zxingJava: [] as boolean[] } : {}) };
  const exactly = (texts: readonly string[]) => texts.length > 0 && texts.every((t) => t === expected);
  for (let i = 0; i < count; i++) {
    const shot = await capture(image, placedSide, random);
    out.pxPerModule.push((shot.scale * placedSide) / modules);
    out.zbar.push(exactly(await zbarDecode(shot.image)));
    if (java) out.zxingJava!.push(exactly((await java.decode(shot.image)).plain));
  }
  return out;
}

const BANDS: ReadonlyArray<readonly [string, number, number]> = [
  ['under 4 px per module', 0, 4],
  ['4-5 px per module', 4, 5],
  ['5 px per module and up (the family\'s range)', 5, Infinity],
];

/**
 * Share of the captures in a band that a referee read, over many images' reads: 'n/a' where the
 * referee did not run or no capture falls in the band.
 */
export function bandShare<T extends { readonly pxPerModule: readonly number[] }>(list: readonly T[], readsOf: (r: T) => readonly boolean[] | undefined, inBand: (r: T, i: number) => boolean): string {
  let n = 0;
  let read = 0;
  for (const r of list) {
    const reads = readsOf(r);
    if (!reads) return 'n/a';
    r.pxPerModule.forEach((_, i) => {
      if (!inBand(r, i)) return;
      n++;
      if (reads[i]) read++;
    });
  }
  return n === 0 ? 'n/a' : `${((100 * read) / n).toFixed(1)}% of ${n}`;
}

/** The table: share of whole-image captures read, delivered isScanables images against plain control images, by band. */
export function wholeImageTable(delivered: readonly WholeImageReads[], controls: readonly WholeImageReads[]): void {
  const share = (list: readonly WholeImageReads[], lo: number, hi: number, reader: 'zbar' | 'zxingJava') =>
    bandShare(list, (r) => r[reader], (r, i) => r.pxPerModule[i]! >= lo && r.pxPerModule[i]! < hi);
  console.log('Whole-image captures (scripts/bench/scan-whole-image.ts: a capture model written apart from the family):');
  console.table(
    BANDS.map(([band, lo, hi]) => ({
      band,
      'ZBar: isScanables images': share(delivered, lo, hi, 'zbar'),
      'ZBar: plain control images': share(controls, lo, hi, 'zbar'),
      'Java ZXing: isScanables images': share(delivered, lo, hi, 'zxingJava'),
      'Java ZXing: plain control images': share(controls, lo, hi, 'zxingJava'),
    })),
  );
}
