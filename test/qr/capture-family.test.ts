/**
 * The capture family and the verdict over it (src/qr/capture-family.ts, src/qr/robustness.ts):
 * the family is stratified and seeded, a capture is what a phone would see, and the verdict is
 * calibrated: the plain control images of varied layouts pass it, a degraded code fails it, and a
 * code of other content is never reported scannable.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { CAPTURE_FAMILY, codeSideRange, familyParams, MIN_MODULE_PX, simulateCapture, type CaptureParams } from '../../src/qr/capture-family.ts';
import { placementFor, renderControlImage, type ControlImage } from '../../src/qr/control-image.ts';
import { zxingDecode } from '../../src/qr/decoders.ts';
import { CAPTURE_DECODERS, captureRobustness, COUNT, familyVerdict, MIN_BY_FAMILY, MIN_READ, robustEnough } from '../../src/qr/robustness.ts';
import type { QrCodePattern } from '../../src/workflows/catalogue.ts';
import { OUTPUT_SIZES } from '../../src/workflows/sizes.ts';

const SHORT = 'https://qr-art.example/p/8f14e45f'; // version 3 at level H
const MEDIUM = 'https://shop.example.com/products/winter-jacket?utm_source=qr'; // version 7
const LONG = 'https://example.org/a/very/long/path/that/makes/the/code/denser?with=query&and=more&params=1234567890'; // version 9

interface Layout {
  readonly content: string;
  readonly pattern: QrCodePattern;
  readonly canvas: { width: number; height: number };
  readonly ratio: number;
  readonly x?: number;
  readonly y?: number;
}

function render(layout: Layout): ControlImage {
  const placement = placementFor(layout.canvas, layout.ratio, layout.x, layout.y);
  return renderControlImage({ content: layout.content, pattern: layout.pattern, canvas: layout.canvas, placement, background: 'gray' });
}

/** The verdict options the worker uses for a render: the code's size and its square in modules. */
function optionsFor(control: ControlImage) {
  return { codeSide: control.layout.codePixels, modules: control.layout.placement.side / control.layout.moduleSize };
}

describe('familyParams', () => {
  it('is the same for the same seed and differs for another', () => {
    expect(familyParams(7, 12)).toEqual(familyParams(7, 12));
    expect(familyParams(8, 12)).not.toEqual(familyParams(7, 12));
  });

  it('spreads every parameter over its whole range, one capture per stratum', () => {
    const count = 12;
    const params = familyParams(3, count);
    for (const key of Object.keys(CAPTURE_FAMILY) as Array<keyof CaptureParams>) {
      const [lo, hi] = CAPTURE_FAMILY[key];
      const width = (hi - lo) / count;
      const strata = params.map((p) => Math.min(count - 1, Math.floor((p[key] - lo) / width)));
      for (const p of params) {
        expect(p[key], key).toBeGreaterThanOrEqual(lo);
        expect(p[key], key).toBeLessThanOrEqual(hi);
      }
      // Rounded parameters (code side, JPEG quality) may land on a stratum's edge.
      if (key !== 'jpegQuality') expect(new Set(strata).size, key).toBe(count);
    }
    const sides = params.map((p) => p.codeSide).sort((a, b) => a - b);
    expect(sides[0]).toBeLessThan(CAPTURE_FAMILY.codeSide[0] + 30);
    expect(sides[count - 1]).toBeGreaterThan(CAPTURE_FAMILY.codeSide[1] - 30);
  });

  it('comes closer to a dense code: no module under MIN_MODULE_PX', () => {
    const modules = 61; // version 9 with its quiet zone
    const [near, far] = codeSideRange({ modules });
    expect(near).toBe(Math.ceil(MIN_MODULE_PX * modules));
    expect(far).toBe(CAPTURE_FAMILY.codeSide[1]);
    for (const p of familyParams(1, 12, { modules })) expect(p.codeSide / modules).toBeGreaterThanOrEqual(MIN_MODULE_PX - 0.01);
    expect(codeSideRange({ modules: 21 })[0]).toBe(CAPTURE_FAMILY.codeSide[0]);
  });

  it('refuses a count that is not a positive integer', () => {
    expect(() => familyParams(1, 0)).toThrow(RangeError);
    expect(() => familyParams(1, 2.5)).toThrow(RangeError);
  });
});

describe('simulateCapture', () => {
  const control = render({ content: SHORT, pattern: 's1', canvas: OUTPUT_SIZES['1:1'].SD, ratio: 0.8 });
  const square = control.layout.placement;
  const params: CaptureParams = { ...familyParams(1, 1)[0]!, codeSide: 250 };

  it('frames the code at the asked size, as luminance, the same pixels for the same seed', async () => {
    const a = await simulateCapture(control.image, square, params, 5);
    const b = await simulateCapture(control.image, square, params, 5);
    const c = await simulateCapture(control.image, square, params, 6);
    expect(a.image.channels).toBe(1);
    expect(a.codeSide).toBe(250);
    // The frame is the placed square and a fifth of it on each side.
    expect(a.image.width).toBe(Math.round(250 * 1.4));
    expect(Buffer.compare(Buffer.from(a.image.data), Buffer.from(b.image.data))).toBe(0);
    expect(Buffer.compare(Buffer.from(a.image.data), Buffer.from(c.image.data))).not.toBe(0);
  });

  it('takes colour images and codes anywhere on the canvas, and a decoder reads the capture', async () => {
    const corner = render({ content: SHORT, pattern: 'd1', canvas: OUTPUT_SIZES['16:9'].SD, ratio: 0.5, x: 0, y: 0 });
    const { width, height } = corner.image;
    const rgb = new Uint8Array(width * height * 3);
    for (let i = 0; i < width * height; i++) rgb.set(corner.image.data[i]! < 128 ? [30, 20, 90] : [250, 230, 190], i * 3);
    const capture = await simulateCapture(rawImage(rgb, width, height, 3), corner.layout.placement, params, 2);
    expect(await zxingDecode(capture.image as never)).toEqual([SHORT]);
  });

  it('flattens contrast and adds noise: a flat grey stays near its level, with some spread', async () => {
    const flat = rawImage(new Uint8Array(400 * 400).fill(128), 400, 400, 1);
    const capture = await simulateCapture(flat, { x: 50, y: 50, side: 300 }, { ...params, brightness: 0, lightGradient: 0, vignette: 0, noise: 3 }, 1);
    const values = [...capture.image.data];
    const mean = values.reduce((s, v) => s + v, 0) / values.length;
    const sd = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length);
    expect(Math.abs(mean - 128)).toBeLessThan(3);
    expect(sd).toBeGreaterThan(0.5);
    expect(sd).toBeLessThan(6);
  });
});

describe('the family verdict on plain control images (calibration)', () => {
  const layouts: Layout[] = [
    { content: SHORT, pattern: 's1', canvas: OUTPUT_SIZES['1:1'].SD, ratio: 0.4 },
    { content: SHORT, pattern: 'd2', canvas: OUTPUT_SIZES['1:1'].SD, ratio: 1 },
    { content: SHORT, pattern: 'c3', canvas: OUTPUT_SIZES['16:9'].SD, ratio: 0.6, x: 0, y: 0 },
    { content: SHORT, pattern: 'r1', canvas: { width: 512, height: 512 }, ratio: 0.5 },
    { content: MEDIUM, pattern: 's3', canvas: OUTPUT_SIZES['3:4'].SD, ratio: 0.9 },
    { content: MEDIUM, pattern: 'rd2', canvas: OUTPUT_SIZES['4:3'].HD, ratio: 0.4, x: 10, y: 400 },
    { content: MEDIUM, pattern: 'sq2', canvas: OUTPUT_SIZES['9:16'].SD, ratio: 0.7 },
    { content: MEDIUM, pattern: 'd3', canvas: OUTPUT_SIZES['1:1'].FullHD, ratio: 0.5 },
    { content: LONG, pattern: 'r3', canvas: OUTPUT_SIZES['1:1'].SD, ratio: 0.95 },
    { content: LONG, pattern: 'c1', canvas: OUTPUT_SIZES['16:9'].HD, ratio: 0.45 },
    { content: LONG, pattern: 'sq3', canvas: OUTPUT_SIZES['1:1'].UltraHD, ratio: 0.4 },
    { content: LONG, pattern: 'rd3', canvas: OUTPUT_SIZES['3:4'].FullHD, ratio: 0.8, x: 0, y: 1664 - 998 },
  ];

  it.each(layouts.map((l) => [`${l.pattern} ${l.canvas.width}x${l.canvas.height} qrRatio ${l.ratio}${l.x !== undefined ? ` at ${l.x},${l.y}` : ''}: ${l.content.length} chars`, l] as const))(
    '%s passes',
    async (_name, layout) => {
      const control = render(layout);
      const verdict = await familyVerdict(control.image, layout.content, control.layout.placement, optionsFor(control));
      expect(verdict.scan.scannable).toBe(true);
      expect(verdict.robustness).toMatchObject({ captures: COUNT, complete: true });
      expect(verdict.robustness!.otherContent).toBeUndefined();
      expect(verdict.robustness!.read).toBeGreaterThanOrEqual(MIN_READ);
      for (const family of CAPTURE_DECODERS) expect(verdict.robustness!.byDecoder[family], family).toBeGreaterThanOrEqual(MIN_BY_FAMILY[family]);
      expect(verdict.robustness!.byAll).toBeLessThanOrEqual(Math.min(...CAPTURE_DECODERS.map((family) => verdict.robustness!.byDecoder[family])));
      expect(verdict.scannable).toBe(true);
    },
  );
});

describe('the family verdict refuses what a phone would not read', () => {
  const control = render({ content: SHORT, pattern: 's1', canvas: OUTPUT_SIZES['1:1'].SD, ratio: 0.6 });
  const square = control.layout.placement;

  /** The control image blurred by sigma px and pulled toward mid-grey to `contrast` of its range. */
  async function degraded(sigma: number, contrast: number): Promise<RawImage> {
    const { width, height } = control.image;
    const { data } = await sharp(control.image.data, { raw: { width, height, channels: 1 } })
      .blur(sigma)
      .linear(contrast, 128 * (1 - contrast))
      .extractChannel(0)
      .raw()
      .toBuffer({ resolveWithObject: true });
    return rawImage(new Uint8Array(data), width, height, 1);
  }

  it('a faint code (a range of ~20 levels) fails: the scan check reads the image itself, the noise, contrast loss and JPEG of a phone bury it', async () => {
    const soft = await degraded(2, 0.08);
    const verdict = await familyVerdict(soft, SHORT, square, optionsFor(control));
    expect(verdict.scan.scannable).toBe(true);
    expect(verdict.robustness!.read).toBeLessThan(MIN_READ);
    expect(verdict.scannable).toBe(false);
  });

  it('an unreadable canvas fails, and stopping early says so', async () => {
    const flat = rawImage(new Uint8Array(768 * 768).fill(200), 768, 768, 1);
    const full = await captureRobustness(flat, SHORT, square);
    expect(full).toMatchObject({ read: 0, captures: COUNT, complete: true, share: 0 });
    const quick = await captureRobustness(flat, SHORT, square, { stopWhenFailed: true });
    expect(quick.complete).toBe(false);
    expect(quick.captures).toBeLessThan(COUNT);
    expect(robustEnough(quick)).toBe(false);
    expect((await familyVerdict(flat, SHORT, square)).scannable).toBe(false);
  });

  it('a code of other content is never reported scannable, and the text it holds is named', async () => {
    const verdict = await familyVerdict(control.image, 'https://qr-art.example/p/another', square, optionsFor(control));
    expect(verdict.scannable).toBe(false);
    expect(verdict.scan.otherContent).toBe(SHORT);
    expect(verdict.robustness!.otherContent).toBe(SHORT);
    expect(verdict.robustness!.read).toBe(0);
  });

  it('robustEnough needs nearly every capture, each decoder family, and no other text', () => {
    const all = { zxing: COUNT, zbar: COUNT, zxingjava: COUNT };
    const base = { share: 1, read: COUNT, captures: COUNT, byDecoder: all, byAll: COUNT, complete: true, ms: 0 };
    expect(robustEnough(base)).toBe(true);
    expect(robustEnough({ ...base, read: MIN_READ })).toBe(true);
    expect(robustEnough({ ...base, read: MIN_READ - 1 })).toBe(false);
    expect(robustEnough({ ...base, byDecoder: { ...MIN_BY_FAMILY } })).toBe(true);
    for (const family of CAPTURE_DECODERS) expect(robustEnough({ ...base, byDecoder: { ...all, [family]: MIN_BY_FAMILY[family] - 1 } }), family).toBe(false);
    expect(robustEnough({ ...base, otherContent: 'x' })).toBe(false);
  });
});
