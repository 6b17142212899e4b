/**
 * A phone's view of an image, simulated (seeded, so runs repeat): the code framed with some of
 * its surroundings, scaled so the code spans about 300 px, a small rotation and perspective
 * tilt, a lens blur, flatter contrast and a brightness shift, a little sensor noise, and JPEG at
 * quality 60-75. Shared by the repair tests and `npm run bench -- scan`.
 */
import sharp, { type Sharp } from 'sharp';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

export interface CaptureParams {
  /** Side in px the placed square (code + quiet zone) spans after capture. */
  readonly codeSide: number;
  readonly rotationDeg: number;
  /** Largest corner displacement of the perspective, as a fraction of the frame side. */
  readonly tilt: number;
  readonly blurSigma: number;
  /** Contrast factor around the mean (1 = unchanged). */
  readonly contrast: number;
  readonly brightness: number;
  readonly noise: number;
  readonly jpegQuality: number;
}

export interface Capture {
  readonly image: RawImage;
  /** Approximate side of the code (placed square) in the captured image, px. */
  readonly codeSide: number;
  readonly params: CaptureParams;
}

/** Where the code is in the source image; the whole image when unknown. */
export interface Square {
  readonly x: number;
  readonly y: number;
  readonly side: number;
}

/** Capture parameters drawn from the ranges a handheld phone gives. */
export function captureParams(seed: number): CaptureParams {
  const random = mulberry32(seed);
  const between = (a: number, b: number) => a + (b - a) * random();
  return {
    codeSide: Math.round(between(260, 340)),
    rotationDeg: between(-6, 6),
    tilt: between(0.01, 0.05),
    blurSigma: between(0.6, 1.1),
    contrast: between(0.6, 0.85),
    brightness: between(-15, 15),
    noise: between(1, 3),
    jpegQuality: Math.round(between(60, 75)),
  };
}

const rawInput = (image: RawImage) => ({ raw: { width: image.width, height: image.height, channels: image.channels } });

async function fromSharp(pipeline: Sharp): Promise<RawImage> {
  const { data, info } = await pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, info.channels as 3);
}

export async function simulateCapture(image: RawImage, square: Square | undefined, params: CaptureParams, seed = 1): Promise<Capture> {
  const sq = square ?? { x: 0, y: 0, side: Math.min(image.width, image.height) };
  // Frame: the code and a fifth of its side around it, as far as the image goes.
  const pad = Math.round(sq.side * 0.2);
  const left = Math.max(0, sq.x - pad);
  const top = Math.max(0, sq.y - pad);
  const width = Math.min(image.width, sq.x + sq.side + pad) - left;
  const height = Math.min(image.height, sq.y + sq.side + pad) - top;
  const scale = params.codeSide / sq.side;
  const outW = Math.max(16, Math.round(width * scale));
  const outH = Math.max(16, Math.round(height * scale));
  let img = await fromSharp(
    sharp(image.data, rawInput(image))
      .extract({ left, top, width, height })
      .resize(outW, outH, { kernel: 'cubic', fit: 'fill' }),
  );
  img = warp(img, params.rotationDeg, params.tilt, mulberry32(seed ^ 0x5bd1e995));
  const mean = meanLuma(img);
  const offset = mean * (1 - params.contrast) + params.brightness;
  img = await fromSharp(sharp(img.data, rawInput(img)).blur(params.blurSigma).linear(params.contrast, offset));
  img = addNoise(img, params.noise, mulberry32(seed ^ 0x27d4eb2f));
  const jpeg = await sharp(img.data, rawInput(img)).jpeg({ quality: params.jpegQuality, chromaSubsampling: '4:2:0' }).toBuffer();
  return { image: await fromSharp(sharp(jpeg)), codeSide: params.codeSide, params };
}

function meanLuma(image: RawImage): number {
  let sum = 0;
  for (let i = 0; i < image.data.length; i += 3) sum += 0.299 * image.data[i]! + 0.587 * image.data[i + 1]! + 0.114 * image.data[i + 2]!;
  return sum / (image.width * image.height);
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
}

function addNoise(image: RawImage, sd: number, random: () => number): RawImage {
  const data = new Uint8Array(image.data.length);
  for (let i = 0; i < data.length; i += 3) {
    const n = gaussian(random) * sd;
    for (let c = 0; c < 3; c++) data[i + c] = Math.max(0, Math.min(255, Math.round(image.data[i + c]! + n)));
  }
  return rawImage(data, image.width, image.height, 3);
}

/**
 * Rotation about the centre and a perspective tilt (each corner moved by up to `tilt` of the
 * side), as one homography; bilinear sampling, edge pixels repeated outside the frame.
 */
function warp(image: RawImage, degrees: number, tilt: number, random: () => number): RawImage {
  const { width: w, height: h, data } = image;
  const a = (degrees * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const cx = w / 2;
  const cy = h / 2;
  const src: Array<[number, number]> = [[0, 0], [w, 0], [w, h], [0, h]];
  const dst = src.map(([x, y]): [number, number] => {
    const jx = (random() * 2 - 1) * tilt * w;
    const jy = (random() * 2 - 1) * tilt * h;
    return [cx + (x - cx) * cos - (y - cy) * sin + jx, cy + (x - cx) * sin + (y - cy) * cos + jy];
  });
  // Output pixel -> source point: the homography that takes dst corners to src corners.
  const H = homography(dst, src);
  const out = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const px = x + 0.5;
      const py = y + 0.5;
      const d = H[6]! * px + H[7]! * py + 1;
      const sx = Math.min(w - 1, Math.max(0, (H[0]! * px + H[1]! * py + H[2]!) / d - 0.5));
      const sy = Math.min(h - 1, Math.max(0, (H[3]! * px + H[4]! * py + H[5]!) / d - 0.5));
      const x0 = Math.floor(sx);
      const y0 = Math.floor(sy);
      const x1 = Math.min(w - 1, x0 + 1);
      const y1 = Math.min(h - 1, y0 + 1);
      const fx = sx - x0;
      const fy = sy - y0;
      const o = (y * w + x) * 3;
      for (let c = 0; c < 3; c++) {
        const top = data[(y0 * w + x0) * 3 + c]! * (1 - fx) + data[(y0 * w + x1) * 3 + c]! * fx;
        const bottom = data[(y1 * w + x0) * 3 + c]! * (1 - fx) + data[(y1 * w + x1) * 3 + c]! * fx;
        out[o + c] = Math.round(top * (1 - fy) + bottom * fy);
      }
    }
  }
  return rawImage(out, w, h, 3);
}

/** The 3x3 homography (h33 = 1, as 8 numbers) taking the four `from` points to the four `to` points. */
function homography(from: ReadonlyArray<readonly [number, number]>, to: ReadonlyArray<readonly [number, number]>): number[] {
  const A: number[][] = [];
  for (let i = 0; i < 4; i++) {
    const [x, y] = from[i]!;
    const [u, v] = to[i]!;
    A.push([x, y, 1, 0, 0, 0, -u * x, -u * y, u]);
    A.push([0, 0, 0, x, y, 1, -v * x, -v * y, v]);
  }
  // Gauss-Jordan with partial pivoting on the 8x9 augmented matrix.
  for (let col = 0; col < 8; col++) {
    let pivot = col;
    for (let r = col + 1; r < 8; r++) if (Math.abs(A[r]![col]!) > Math.abs(A[pivot]![col]!)) pivot = r;
    [A[col], A[pivot]] = [A[pivot]!, A[col]!];
    const p = A[col]![col]!;
    for (let c = col; c < 9; c++) A[col]![c]! /= p;
    for (let r = 0; r < 8; r++) {
      if (r === col) continue;
      const f = A[r]![col]!;
      if (f === 0) continue;
      for (let c = col; c < 9; c++) A[r]![c]! -= f * A[col]![c]!;
    }
  }
  return A.map((row) => row[8]!);
}
