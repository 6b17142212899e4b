/**
 * A client's own code (v1-v3b) through the worker's control-image step: fetched from a local host,
 * located, and placed on the canvas so each module is a whole number of pixels on the pixel grid.
 * The geometry it reports must describe the placed pixels exactly, and with it ensureScannable must
 * repair art generated over a client's code that no decoder reads. A code that cannot be located
 * (a rotated one) is still used, letterboxed, and its images only checked.
 */
import QRCode from 'qrcode';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toLuma } from '../../src/image/luma.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { ModuleRole } from '../../src/qr/encode.ts';
import { ensureScannable, type QrGeometry } from '../../src/qr/guarantee.ts';
import { locateQr } from '../../src/qr/locate.ts';
import { checkModules } from '../../src/qr/repair/index.ts';
import { scanCheck } from '../../src/qr/scan.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { clientControlImage, type JobControlImage } from '../../src/worker/control-image-runner.ts';
import { serveFiles, type FileServer } from '../helpers/file-server.ts';
import { opencvDecode, zbarDecode } from '../helpers/independent-decoders.ts';
import { darkOf, drawCode, paint } from './locate-fixtures.ts';
import { captureParams, simulateCapture } from './phone-capture.ts';

const CANVAS = { width: 768, height: 768 };
const PLAIN = 'https://example.com/brought-by-the-client';
const LOGO = 'HELLO FROM A PLAIN QR CODE 12345';
const plainCode = QRCode.create(PLAIN, { errorCorrectionLevel: 'M' });
const logoCode = QRCode.create(LOGO, { errorCorrectionLevel: 'H', maskPattern: 4 });

let host: FileServer;

async function png(image: RawImage): Promise<Buffer> {
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } }).png().toBuffer();
}

beforeAll(async () => {
  // As qrcode.toBuffer writes it: 7 px modules, a 4-module margin.
  const plain = await QRCode.toBuffer(PLAIN, { errorCorrectionLevel: 'M', scale: 7, margin: 4 });
  // Antialiased at 4.4 px modules, in colour, a logo plate over the middle.
  const n = logoCode.modules.size;
  const drawing = { pitch: 4.4, x: 17.3, y: 17.3, dark: [40, 30, 110] as const, light: [252, 248, 235] as const };
  const logo = drawCode(darkOf(logoCode), n, drawing);
  const middle = drawing.x + (n / 2) * drawing.pitch;
  paint(logo, { cx: middle, cy: middle, radius: 2.5 * drawing.pitch, square: true }, [255, 255, 255]);
  paint(logo, { cx: middle, cy: middle, radius: 1.6 * drawing.pitch }, [220, 60, 30]);
  const rotated = await sharp(plain).rotate(5, { background: '#ffffff' }).png().toBuffer();
  // The client's code beside a light-on-dark one of other content, which phones read as well.
  const other = await sharp(await QRCode.toBuffer('https://other.example/two', { scale: 7, margin: 4 })).negate({ alpha: false }).png().toBuffer();
  const { width: side } = await sharp(plain).metadata();
  const bothPolarities = await sharp({ create: { width: 2 * side! + 40, height: side!, channels: 3, background: '#ffffff' } })
    .composite([{ input: plain, left: 0, top: 0 }, { input: other, left: side! + 40, top: 0 }])
    .png()
    .toBuffer();
  // A code in a wide margin, as in a screenshot of a page: 7 px modules, 60 modules of white around.
  const wideMargin = await QRCode.toBuffer(PLAIN, { errorCorrectionLevel: 'M', scale: 7, margin: 60 });
  host = await serveFiles({ '/plain.png': plain, '/logo.png': await png(logo), '/rotated.png': rotated, '/both-polarities.png': bothPolarities, '/wide-margin.png': wideMargin });
});

afterAll(async () => {
  await host?.close();
});

function controlOf(path: string): Promise<JobControlImage> {
  return clientControlImage(`${host.url}${path}`, CANVAS, { policy: { allowPrivate: true } }, new AbortController().signal);
}

function geometryOf(control: JobControlImage): QrGeometry {
  if (!control.geometry) throw new Error(`no geometry: ${JSON.stringify(control.clientCode)}`);
  return control.geometry;
}

/**
 * Per module: the worst distance of its pixels' luminance from its colour (0 or 255), over the
 * pixels at least `inset` px inside its edges (an antialiased client edge pixel, upscaled, is a
 * band as wide as the scale).
 */
function moduleMismatch(image: RawImage, geometry: QrGeometry, inset: number): Float32Array {
  const luma = toLuma(image);
  const { matrix, layout } = geometry;
  const m = layout.moduleSize;
  const worst = new Float32Array(matrix.size * matrix.size);
  for (let r = 0; r < matrix.size; r++) {
    for (let c = 0; c < matrix.size; c++) {
      const want = matrix.dark[r * matrix.size + c] ? 0 : 255;
      let w = 0;
      for (let y = inset; y < m - inset; y++) {
        for (let x = inset; x < m - inset; x++) {
          const v = luma.data[(layout.codeY + r * m + y) * luma.width + layout.codeX + c * m + x]!;
          w = Math.max(w, Math.abs(v - want));
        }
      }
      worst[r * matrix.size + c] = w;
    }
  }
  return worst;
}

/**
 * Art generated over the control image, built to fail: a smooth colour field pulled toward the
 * code by `strength`, a share of its data modules ignored entirely.
 */
function artOver(control: JobControlImage, strength: number, covered: number, seed: number): RawImage {
  const { matrix, layout } = geometryOf(control);
  const random = mulberry32(seed);
  const hidden = new Uint8Array(matrix.size * matrix.size);
  for (let i = 0; i < hidden.length; i++) if (matrix.role[i] === ModuleRole.Data && random() < covered) hidden[i] = 1;
  const phases = [0, 1, 2].map(() => [0.004 + random() * 0.01, 0.004 + random() * 0.01, random() * 6] as const);
  const luma = toLuma(control.image);
  const { width, height } = control.image;
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const mx = Math.floor((x - layout.codeX) / layout.moduleSize);
      const my = Math.floor((y - layout.codeY) / layout.moduleSize);
      const off = mx >= 0 && my >= 0 && mx < matrix.size && my < matrix.size && hidden[my * matrix.size + mx] === 1;
      const pull = off ? 0 : strength * (luma.data[y * width + x]! - 128);
      for (let ch = 0; ch < 3; ch++) {
        const [fx, fy, p] = phases[ch]!;
        const base = 128 + 110 * Math.sin(x * fx + p) * Math.cos(y * fy - p);
        data[(y * width + x) * 3 + ch] = Math.max(0, Math.min(255, Math.round(base + pull)));
      }
    }
  }
  return rawImage(data, width, height, 3);
}

/** Whether ZBar and OpenCV (decoders we did not write) read exactly `text` from a simulated phone photo of the code. */
async function readAfterCapture(image: RawImage, geometry: QrGeometry, text: string, seed: number): Promise<{ zbar: boolean; opencv: boolean }> {
  const capture = await simulateCapture(image, geometry.layout.placement, captureParams(seed), seed);
  const exactly = (texts: string[]) => texts.length > 0 && texts.every((t) => t === text);
  return { zbar: exactly(await zbarDecode(capture.image)), opencv: exactly(await opencvDecode(capture.image)) };
}

describe('clientControlImage: a client code placed on the module grid', () => {
  it('a qrcode PNG: the exact matrix, whole-pixel modules, and every module of the canvas in its colour', async () => {
    const control = await controlOf('/plain.png');
    const geometry = geometryOf(control);
    expect(control.expected).toBe(PLAIN);
    expect(control.clientCode).toMatchObject({ located: true, matrixSource: 're-encoded', misdrawnModules: 0 });
    expect(Array.from(geometry.matrix.dark)).toEqual(Array.from(darkOf(plainCode)));
    const { layout } = geometry;
    // About the size the letterbox gave (the image fitted into 0.8 of the canvas), rounded to whole pixels per module.
    const letterboxPitch = (0.8 * 768) / (plainCode.modules.size + 8);
    expect(Math.abs(layout.moduleSize - letterboxPitch)).toBeLessThanOrEqual(0.5);
    expect(control.codeSide).toBe(layout.codePixels);
    expect(geometry.control).toBeUndefined();
    // Centred, and the canvas pixels are the modules: pure black or white, edges on pixel edges.
    expect(Math.abs(layout.codeX + layout.codePixels / 2 - 384)).toBeLessThanOrEqual(1);
    expect(Math.max(...moduleMismatch(control.image, geometry, 0))).toBe(0);
    expect(checkModules(control.image, geometry)).toMatchObject({ wrong: 0 });
  });

  it('a code in a wide margin (a screenshot of a page) is as large as the plain PNG\'s, not a stamp of a pixel or two a module', async () => {
    const [wide, plain] = [geometryOf(await controlOf('/wide-margin.png')), geometryOf(await controlOf('/plain.png'))];
    expect(wide.layout.moduleSize).toBe(plain.layout.moduleSize);
    expect(Array.from(wide.matrix.dark)).toEqual(Array.from(darkOf(plainCode)));
  });

  it('an antialiased, coloured code at 4.4 px modules under a logo: the true matrix, every module off the logo in its colour', async () => {
    const control = await controlOf('/logo.png');
    const geometry = geometryOf(control);
    expect(control.expected).toBe(LOGO);
    expect(control.clientCode).toMatchObject({ located: true, matrixSource: 're-encoded' });
    expect(Array.from(geometry.matrix.dark)).toEqual(Array.from(darkOf(logoCode)));
    // One source pixel inside the edges: the 4.4 px modules are scaled up about 4x.
    const mismatch = moduleMismatch(control.image, geometry, Math.ceil(geometry.layout.moduleSize / 4.4));
    const n = geometry.matrix.size;
    const middle = n / 2;
    let checked = 0;
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) {
        // The logo plate spans 5 modules around the middle; the colours are 40..110 dark and ~248 light in luminance.
        if (Math.abs(r + 0.5 - middle) < 3.6 && Math.abs(c + 0.5 - middle) < 3.6) continue;
        expect(mismatch[r * n + c], `module ${r},${c}`).toBeLessThan(geometry.matrix.dark[r * n + c] ? 60 : 12);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(n * n - 60);
    // Located again in the canvas, the code's edges lie on the layout's pixel grid.
    const again = await locateQr(control.image, LOGO);
    if (!again.located) throw new Error(again.reason);
    const { layout } = geometry;
    expect(Math.abs(again.origin.x - layout.codeX)).toBeLessThan(0.1);
    expect(Math.abs(again.origin.y - layout.codeY)).toBeLessThan(0.1);
    expect(Math.abs(again.pitch.x - layout.moduleSize)).toBeLessThan(0.01);
    expect(Math.abs(again.pitch.y - layout.moduleSize)).toBeLessThan(0.01);
  });
});

describe('ensureScannable on art generated over a client code', () => {
  it('repairs art that no decoder reads into an image that scans, and that ZBar and OpenCV read in a phone photo', async () => {
    const control = await controlOf('/plain.png');
    const geometry = geometryOf(control);
    const broken = artOver(control, 0.22, 0.2, 3);
    expect((await scanCheck(broken, PLAIN, { codeSide: control.codeSide })).scannable).toBe(false);
    expect((await readAfterCapture(broken, geometry, PLAIN, 1)).zbar).toBe(false);

    const result = await ensureScannable(broken, control.expected, geometry, 'on_failure', { codeSide: control.codeSide });
    expect(result).toMatchObject({ scannable: true, repaired: true });
    expect(result.modulesAfter?.wrong).toBe(0);
    for (const seed of [1, 2]) expect(await readAfterCapture(result.image, geometry, PLAIN, seed), `capture ${seed}`).toEqual({ zbar: true, opencv: true });
    // Nothing outside the code's square (with its quiet zone) changed.
    const { x, y, side } = geometry.layout.placement;
    for (let py = 0; py < broken.height; py += 3) {
      for (let px = 0; px < broken.width; px += 3) {
        if (px >= x && px < x + side && py >= y && py < y + side) continue;
        const i = (py * broken.width + px) * 3;
        expect(result.image.data[i]).toBe(broken.data[i]);
      }
    }
  });

  it('repairs art over the logo code too, to the true matrix', async () => {
    const control = await controlOf('/logo.png');
    const geometry = geometryOf(control);
    const broken = artOver(control, 0.25, 0.15, 5);
    expect((await scanCheck(broken, LOGO, { codeSide: control.codeSide })).scannable).toBe(false);
    const result = await ensureScannable(broken, control.expected, geometry, 'on_failure', { codeSide: control.codeSide });
    expect(result).toMatchObject({ scannable: true, repaired: true });
    expect(result.modulesAfter?.wrong).toBe(0);
    for (const seed of [1, 2]) expect(await readAfterCapture(result.image, geometry, LOGO, seed), `capture ${seed}`).toEqual({ zbar: true, opencv: true });
  });
});

describe('clientControlImage: refused', () => {
  it('a code beside a light-on-dark code of other content: a phone may read either', async () => {
    await expect(controlOf('/both-polarities.png')).rejects.toMatchObject({ code: 'invalid_qr_image', message: expect.stringContaining('holds 2 QR codes with different contents') });
  });
});

describe('clientControlImage: a code that cannot be located', () => {
  it('a rotated code is still read and letterboxed, with no geometry and the reason: its images are only checked', async () => {
    const control = await controlOf('/rotated.png');
    expect(control.expected).toBe(PLAIN);
    expect(control.geometry).toBeUndefined();
    expect(control.clientCode).toMatchObject({ located: false, reason: expect.stringMatching(/rotated/) });
    expect(control.image).toMatchObject({ width: 768, height: 768 });
    const result = await ensureScannable(control.image, control.expected, control.geometry, 'on_failure', { codeSide: control.codeSide });
    expect(result).toMatchObject({ repaired: false, passes: 0 });
  });
});
