/**
 * A third capture model for `npm run bench -- scan`, run by programs nobody here wrote:
 * ImageMagick makes the photo and Debian's `zbarimg` reads it as it is, colour JPEG and all
 * (`apt-get install imagemagick zbar-tools`; the bench leaves the model out where they are
 * missing). Java ZXing, where installed, reads the same JPEG through BT.601 luma, as its
 * BufferedImageLuminanceSource does; zbarimg gets ImageMagick's intensity, Rec. 709 luma.
 *
 * What it does that the capture family (src/qr/capture-family.ts) and the whole-image model
 * (scan-whole-image.ts) do not: ImageMagick's resampling filters (Lanczos, Mitchell, Triangle,
 * Box), a perspective that moves each corner by up to 7% of the image, a phone's sharpening
 * (unsharp mask), gamma 0.8-1.25, colour noise independent in each channel and a colour JPEG
 * with its chroma subsampled. The whole image is photographed, the code's placed square at
 * 140-360 px (no floor on px per module, as in the whole-image model). Noise runs past the
 * family's: up to ~8 levels of luma against the family's 4, so the figures are split by it too.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { bandShare } from './scan-whole-image.ts';
import type { ZxingJavaReferee } from './zxing-java.ts';
import { BenchUsageError } from './usage-error.ts';

const run = promisify(execFile);

/** Per capture of one image: its px per module, its noise (luma levels) and what each referee read. */
export interface ImageMagickReads {
  readonly pxPerModule: number[];
  readonly noiseLuma: number[];
  readonly zbarimg: boolean[];
  readonly zxingJava?: boolean[];
}

let found: { command: string | undefined } | undefined;

/**
 * ImageMagick's convert, when installed: `magick` (version 7) or Debian's versioned name first,
 * since a plain `convert` earlier on PATH may be another program. Probed once per process.
 */
export function imageMagickCommand(): string | undefined {
  found ??= {
    command: ['magick', 'convert-im6.q16', 'convert'].find((command) => {
      const probe = spawnSync(command, ['-version'], { encoding: 'utf8' });
      return probe.status === 0 && probe.stdout.includes('ImageMagick');
    }),
  };
  return found.command;
}

/** Whether the model can run: ImageMagick and zbarimg are both installed. */
export function imageMagickModelAvailable(): boolean {
  return imageMagickCommand() !== undefined && spawnSync('zbarimg', ['--version']).status === 0;
}

// ImageMagick's Gaussian noise at -attenuate 1 measured ~20 levels of standard deviation in each
// 8-bit channel; channels are independent, so BT.601 luma gets sqrt(0.299² + 0.587² + 0.114²) of it.
const NOISE_PER_ATTENUATE = 20;
const LUMA_OF_CHANNEL_NOISE = Math.hypot(0.299, 0.587, 0.114);

interface Shot {
  readonly args: string[];
  readonly pxPerModule: number;
  readonly noiseLuma: number;
}

/** One capture's ImageMagick arguments (input from stdin as PNG, output `out`), drawn from `random`. */
function shotOf(width: number, height: number, placedSide: number, modules: number, random: () => number, out: string): Shot {
  const between = (a: number, b: number) => a + (b - a) * random();
  const side = between(140, 360);
  const w = Math.max(16, Math.round((width * side) / placedSide));
  const h = Math.max(16, Math.round((height * side) / placedSide));
  const corner = (x: number, y: number) => [x, y, x + between(-0.07, 0.07) * w, y + between(-0.07, 0.07) * h];
  const perspective = [...corner(0, 0), ...corner(w, 0), ...corner(0, h), ...corner(w, h)].map((v) => v.toFixed(1)).join(' ');
  const filter = ['Lanczos', 'Mitchell', 'Triangle', 'Box'][Math.floor(random() * 4)]!;
  const light = between(0, 0.3);
  const rotation = between(-10, 10);
  const blur = between(0.3, 1.3);
  const motion = random() < 0.4 ? between(0.5, 3) : 0;
  const motionDeg = between(0, 360);
  const sharpen = between(0, 1.5);
  const gamma = between(0.8, 1.25);
  const black = between(0, 12);
  const white = between(82, 100);
  const attenuate = between(0.1, 0.6);
  const noiseSeed = Math.floor(random() * 1e6);
  const quality = Math.round(between(55, 85));
  const args = [
    'png:-', '-filter', filter, '-resize', `${w}x${h}!`, '-virtual-pixel', 'edge', '-distort', 'Perspective', perspective,
    // Uneven light: a gradient multiplied in, then the phone's roll.
    '(', '-size', `${w}x${h}`, `gradient:gray(100%)-gray(${(100 * (1 - light)).toFixed(0)}%)`, ')', '-compose', 'Multiply', '-composite',
    '-background', 'gray60', '-rotate', rotation.toFixed(2), '-blur', `0x${blur.toFixed(2)}`,
    ...(motion > 0 ? ['-motion-blur', `0x${motion.toFixed(2)}+${motionDeg.toFixed(0)}`] : []),
    '-unsharp', `0x1+${sharpen.toFixed(2)}+0.02`, '-gamma', gamma.toFixed(2), '+level', `${black.toFixed(0)}%,${white.toFixed(0)}%`,
    '-seed', String(noiseSeed), '-attenuate', attenuate.toFixed(2), '+noise', 'Gaussian',
    '-quality', String(quality), '-sampling-factor', '2x2', out,
  ];
  return { args, pxPerModule: side / modules, noiseLuma: attenuate * NOISE_PER_ATTENUATE * LUMA_OF_CHANNEL_NOISE };
}

/** One ImageMagick photo of `image` (PNG bytes `png`), drawn from `random`, as a JPEG file written to `file`. */
export async function imageMagickCapture(png: Buffer, image: RawImage, placedSide: number, modules: number, random: () => number, file: string): Promise<Omit<Shot, 'args'>> {
  const command = imageMagickCommand();
  if (!command) throw new BenchUsageError('ImageMagick is not installed (apt-get install imagemagick)');
  const shot = shotOf(image.width, image.height, placedSide, modules, random, file);
  await new Promise<void>((resolve, reject) => {
    const child = execFile(command, shot.args, (error) => (error ? reject(error) : resolve()));
    child.stdin!.end(png);
  });
  return { pxPerModule: shot.pxPerModule, noiseLuma: shot.noiseLuma };
}

/** The image as PNG bytes, what ImageMagick reads from stdin. */
export function pngOf(image: RawImage): Promise<Buffer> {
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels as 1 | 3 | 4 } }).png().toBuffer();
}

/** `count` ImageMagick captures of `image` (seeded), each read by zbarimg and Java ZXing. */
export async function imageMagickReads(image: RawImage, expected: string, placedSide: number, modules: number, count: number, seed: number, java: ZxingJavaReferee | undefined): Promise<ImageMagickReads> {
  const dir = await mkdtemp(join(tmpdir(), 'scan-im-'));
  const random = mulberry32(seed);
  const out = { pxPerModule: [] as number[], noiseLuma: [] as number[], zbarimg: [] as boolean[], ...(java ? { zxingJava: [] as boolean[] } : {}) };
  const png = await pngOf(image);
  try {
    for (let i = 0; i < count; i++) {
      const file = join(dir, `${i}.jpg`);
      const shot = await imageMagickCapture(png, image, placedSide, modules, random, file);
      out.pxPerModule.push(shot.pxPerModule);
      out.noiseLuma.push(shot.noiseLuma);
      out.zbarimg.push(await zbarimgReads(file, expected));
      if (java) {
        const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
        const texts = (await java.decode(rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, info.channels as 3))).plain;
        out.zxingJava!.push(texts.length > 0 && texts.every((t) => t === expected));
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

/** Whether zbarimg reads exactly `expected` from the file (its bytes as UTF-8, as the verdict's ZBar reads them). */
async function zbarimgReads(file: string, expected: string): Promise<boolean> {
  try {
    const { stdout } = await run('zbarimg', ['-q', '--raw', '-Sbinary', file], { encoding: 'buffer' });
    const texts = stdout.toString('utf8').split('\n').filter((t) => t.length > 0);
    return texts.length > 0 && texts.every((t) => t === expected);
  } catch {
    return false; // zbarimg exits 4 when it reads nothing
  }
}

const BANDS: ReadonlyArray<readonly [string, (px: number, noise: number) => boolean]> = [
  ['under 4 px per module', (px) => px < 4],
  ['4-5 px per module', (px) => px >= 4 && px < 5],
  ['5 px per module and up, noise within the family\'s 4 levels', (px, noise) => px >= 5 && noise <= 4],
  ['5 px per module and up, noise 4-8 levels', (px, noise) => px >= 5 && noise > 4],
];

/** The table: share of captures read, delivered isScanables images against plain control images, by band. */
export function imageMagickTable(delivered: readonly ImageMagickReads[], controls: readonly ImageMagickReads[]): void {
  const share = (list: readonly ImageMagickReads[], inBand: (px: number, noise: number) => boolean, reader: 'zbarimg' | 'zxingJava') =>
    bandShare(list, (r) => r[reader], (r, i) => inBand(r.pxPerModule[i]!, r.noiseLuma[i]!));
  console.log('ImageMagick captures (scripts/bench/scan-imagemagick.ts: photos made and read by programs nobody here wrote):');
  console.table(
    BANDS.map(([band, inBand]) => ({
      band,
      'zbarimg: isScanables images': share(delivered, inBand, 'zbarimg'),
      'zbarimg: plain control images': share(controls, inBand, 'zbarimg'),
      'Java ZXing: isScanables images': share(delivered, inBand, 'zxingJava'),
      'Java ZXing: plain control images': share(controls, inBand, 'zxingJava'),
    })),
  );
}
