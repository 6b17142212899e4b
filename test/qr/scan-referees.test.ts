/**
 * The scan check against two decoders we did not write (ZBar, OpenCV) on images it has
 * never seen: plain codes from the qrcode package, then degraded the ways prints and
 * photos degrade. Seeded, so every run sees the same images.
 */
import QRCode from 'qrcode';
import sharp, { type Sharp } from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { scanCheck, type ScanVerdict } from '../../src/qr/scan.ts';
import { opencvDecode, zbarDecode } from '../helpers/independent-decoders.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';


function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
}

interface Render {
  image: RawImage;
  /** Side of the code (without quiet zone) in px. */
  side: number;
  /** Where the code starts and the px of one module. */
  x0: number;
  module: number;
}

/** Grey RGB square canvas; the code with a 4-module quiet zone, `module` px per module. */
function render(content: string, ecl: 'L' | 'M' | 'Q' | 'H', module: number, dark = 0, light = 255): Render {
  const qr = QRCode.create(content, { errorCorrectionLevel: ecl });
  const n = qr.modules.size;
  const size = (n + 8) * module;
  const data = new Uint8Array(size * size * 3).fill(light);
  for (let y = 0; y < n * module; y++) {
    for (let x = 0; x < n * module; x++) {
      if (!qr.modules.data[Math.floor(y / module) * n + Math.floor(x / module)]) continue;
      const o = ((y + 4 * module) * size + x + 4 * module) * 3;
      data[o] = data[o + 1] = data[o + 2] = dark;
    }
  }
  return { image: rawImage(data, size, size, 3), side: n * module, x0: 4 * module, module };
}

const rawInput = (image: RawImage) => ({ raw: { width: image.width, height: image.height, channels: image.channels } });

async function decoded(input: Sharp): Promise<RawImage> {
  const { data, info } = await input.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, info.channels as 3);
}

const throughSharp = (image: RawImage, edit: (s: Sharp) => Sharp) => decoded(edit(sharp(image.data, rawInput(image))));

const blurred = (image: RawImage, sigma: number) => throughSharp(image, (s) => s.blur(sigma));
const rotated = (image: RawImage, degrees: number) => throughSharp(image, (s) => s.rotate(degrees, { background: '#ffffff' }));

async function jpeg(image: RawImage, quality: number): Promise<RawImage> {
  return decoded(sharp(await sharp(image.data, rawInput(image)).jpeg({ quality }).toBuffer()));
}

function noisy(image: RawImage, sd: number, random: () => number): RawImage {
  const data = new Uint8Array(image.data.length);
  for (let i = 0; i < data.length; i += 3) {
    const n = gaussian(random) * sd; // same noise on R, G, B: luminance noise of sd
    for (let c = 0; c < 3; c++) data[i + c] = Math.max(0, Math.min(255, Math.round(image.data[i + c]! + n)));
  }
  return rawImage(data, image.width, image.height, 3);
}

function covered(image: RawImage, x: number, y: number, w: number, h: number, value: number): RawImage {
  const data = Uint8Array.from(image.data);
  for (let j = Math.round(y); j < Math.round(y + h); j++) {
    for (let i = Math.round(x); i < Math.round(x + w); i++) data.fill(value, (j * image.width + i) * 3, (j * image.width + i) * 3 + 3);
  }
  return rawImage(data, image.width, image.height, 3);
}

interface Case {
  name: string;
  content: string;
  image: RawImage;
  codeSide: number;
  /** The undegraded render the image was made from. */
  source: RawImage;
}

const CONTENTS: ReadonlyArray<{ text: string; ecl: 'L' | 'M' | 'Q' | 'H'; module: number }> = [
  { text: 'https://example.com/r/7Hq2', ecl: 'H', module: 9 },
  { text: 'https://shop.example.org/products/lighthouse-print-a3?ref=qr&campaign=autumn-2025&variant=42', ecl: 'M', module: 6 },
  { text: 'WIFI:T:WPA;S:harbour-guest;P:k33p-it-dry;;', ecl: 'Q', module: 7 },
  { text: 'Grüße aus Köln – 東京 ✓ café', ecl: 'H', module: 6 },
  { text: '31415926535897932384626433832795', ecl: 'L', module: 10 },
];

async function buildCases(): Promise<Case[]> {
  const random = mulberry32(20251121);
  const cases: Case[] = [];
  for (const { text, ecl, module } of CONTENTS) {
    const r = render(text, ecl, module);
    const low = render(text, ecl, module, 110, 150);
    const add = (name: string, image: RawImage) => cases.push({ name, content: text, image, codeSide: Math.round((r.side * image.width) / r.image.width), source: r.image });
    add('plain', r.image);
    for (const sigma of [1, 2, 3, 4, 5]) add(`blur σ${sigma}`, await blurred(r.image, sigma * (module / 6)));
    for (const sd of [30, 60, 90]) add(`noise ${sd}`, noisy(r.image, sd, random));
    add('blur σ2 + noise 40', noisy(await blurred(r.image, 2 * (module / 6)), 40, random));
    add('low contrast 110/150', noisy(low.image, 4, random));
    add('low contrast + noise 15', noisy(low.image, 15, random));
    add('low contrast + blur σ2', await blurred(low.image, 2 * (module / 6)));
    // A grey block over the middle of the data area (grey: unreadable either way).
    add('covered 10%', covered(r.image, r.x0 + r.side * 0.35, r.x0 + r.side * 0.35, r.side * 0.32, r.side * 0.32, 128));
    add('covered 20%', covered(r.image, r.x0 + r.side * 0.3, r.x0 + r.side * 0.3, r.side * 0.45, r.side * 0.45, 128));
    add('covered 35%', covered(r.image, r.x0 + r.side * 0.2, r.x0 + r.side * 0.25, r.side * 0.6, r.side * 0.6, 128));
    add('finder covered', covered(r.image, r.x0 - module, r.x0 - module, 9 * module, 9 * module, 255));
    for (const degrees of [3, 10, 30]) add(`rotated ${degrees}°`, await rotated(r.image, degrees));
    add('jpeg q10 of noise 25', await jpeg(noisy(r.image, 25, random), 10));
    add('jpeg q30 of blur σ3', await jpeg(await blurred(r.image, 3 * (module / 6)), 30));
    add('jpeg q20 of low contrast', await jpeg(noisy(low.image, 6, random), 20));
  }
  return cases;
}

interface Outcome {
  c: Case;
  ours: ScanVerdict;
  wrong: ScanVerdict;
  /** What each referee reads from the image as given. */
  zbar: string[];
  opencv: string[];
  /** What they read from any of the camera-like views (sharp's resize, not our code). */
  zbarViews: string[];
  opencvViews: string[];
}

/**
 * A phone never sees the file's pixels one to one: its optics and sensor average them, the
 * way the check's downscale does. So a referee also gets the image resized by sharp
 * (libvips, an implementation we did not write) to codes of ~320, 240 and 160 px (the
 * range the check's ladder covers), each as is and after a light blur (σ 0.7, like the check's 3x3 kernel). Without these
 * views the referees miss most noisy images whose noise a camera would average away, and
 * "confirmed by a referee" would only mean "clean pixels". Made on demand: most images
 * are read from the first view.
 */
function views(c: Case): Array<() => Promise<RawImage>> {
  const out: Array<() => Promise<RawImage>> = [];
  for (const codePx of [Infinity, 320, 240, 160]) {
    const factor = c.codeSide / codePx;
    if (factor <= 1 && codePx !== Infinity) continue;
    const width = Math.round(c.image.width / Math.max(1, factor));
    for (const sigma of [0, 0.7]) {
      let made: Promise<RawImage> | undefined;
      out.push(() => (made ??= throughSharp(c.image, (s) => {
        const sized = width < c.image.width ? s.resize(width) : s;
        return sigma > 0 ? sized.blur(sigma) : sized;
      })));
    }
  }
  return out;
}

/** What a referee reads from the image as given (the first view), and from the first view it reads anything from. */
async function read(seen: Array<() => Promise<RawImage>>, decode: (image: RawImage) => Promise<string[]>): Promise<{ given: string[]; any: string[] }> {
  let given: string[] = [];
  for (const [index, view] of seen.entries()) {
    const texts = await decode(await view());
    if (index === 0) given = texts;
    if (texts.length > 0) return { given, any: texts };
  }
  return { given, any: [] };
}

describe('scan check vs independent referees (ZBar, OpenCV)', () => {
  const outcomes: Outcome[] = [];

  beforeAll(async () => {
    for (const c of await buildCases()) {
      const seen = views(c);
      const zbar = await read(seen, zbarDecode);
      const opencv = await read(seen, opencvDecode);
      outcomes.push({
        c,
        ours: await scanCheck(c.image, c.content, { codeSide: c.codeSide }),
        // The same image checked against a content it does not encode.
        wrong: await scanCheck(c.image, `${c.content}#`, { codeSide: c.codeSide }),
        zbar: zbar.given,
        opencv: opencv.given,
        zbarViews: zbar.any,
        opencvViews: opencv.any,
      });
    }
    printTable(outcomes);
  }, 240_000);

  it('the corpus is sound: a referee never reads anything but the content', () => {
    for (const o of outcomes) {
      for (const text of [...o.zbarViews, ...o.opencvViews]) expect(text, o.c.name).toBe(o.c.content);
    }
  });

  it('whenever the check says true, a referee reads the exact content', async () => {
    const unconfirmed = outcomes.filter((o) => o.ours.scannable && !o.zbarViews.includes(o.c.content) && !o.opencvViews.includes(o.c.content));
    // Measured: 2 of 115 images pass the check with no referee reading them at any view: an
    // ECC-L code at 40 levels of contrast under noise, which ZXing-C++ reads exactly (Reed-
    // Solomon corrected), and a code blurred by 2/3 of a module (blur σ4) that the ladder's
    // mean-window rungs read, as WeChat's decoder, a phone's, does too (measured with
    // scripts/bench/scan-corpus-wechat.ts); ZBar and OpenCV read neither. The allowance is what
    // was measured, and such an image must still be a render of exactly that content: the
    // referees read its undegraded source.
    expect(unconfirmed.length, unconfirmed.map((o) => `${o.c.content} / ${o.c.name}`).join('; ')).toBeLessThanOrEqual(MAX_UNCONFIRMED);
    for (const o of unconfirmed) {
      expect(await zbarDecode(o.c.source)).toEqual([o.c.content]);
      expect(await opencvDecode(o.c.source)).toEqual([o.c.content]);
    }
  });

  it('never says true for a content the image does not encode', () => {
    for (const o of outcomes) {
      expect(o.wrong.scannable, o.c.name).toBe(false);
      // Whatever was read instead is reported, and it is the real content.
      if (o.wrong.otherContent !== undefined) expect(o.wrong.otherContent).toBe(o.c.content);
    }
    // It did read the real content instead on every image it passes.
    for (const o of outcomes.filter((x) => x.ours.scannable)) expect(o.wrong.otherContent, o.c.name).toBe(o.c.content);
  });

  it('agrees with the referees', () => {
    const both = outcomes.filter((o) => o.zbarViews.length > 0 && o.opencvViews.length > 0);
    const either = outcomes.filter((o) => o.zbarViews.length > 0 || o.opencvViews.length > 0);
    expect(both.length).toBeGreaterThanOrEqual(MIN_BOTH);
    expect(both.filter((o) => o.ours.scannable).length / both.length).toBeGreaterThanOrEqual(AGREE_BOTH);
    expect(either.filter((o) => o.ours.scannable).length / either.length).toBeGreaterThanOrEqual(AGREE_EITHER);
  });
});

// Measured on this corpus: 77 images read by both referees (check true on all 77), 88 by
// either (true on all 88), 2 passes no referee confirms. Thresholds sit a little below.
const MAX_UNCONFIRMED = 2;
const MIN_BOTH = 70;
const AGREE_BOTH = 0.97;
const AGREE_EITHER = 0.95;

function printTable(outcomes: Outcome[]): void {
  const table = (zbar: (o: Outcome) => boolean, opencv: (o: Outcome) => boolean) => {
    const rows = new Map<string, { total: number; ours: number }>();
    for (const o of outcomes) {
      const k = `ZBar ${zbar(o) ? 'reads' : 'fails'}, OpenCV ${opencv(o) ? 'reads' : 'fails'}`;
      const row = rows.get(k) ?? { total: 0, ours: 0 };
      row.total++;
      if (o.ours.scannable) row.ours++;
      rows.set(k, row);
    }
    return [...rows].sort().map(([k, r]) => `    ${k}: ${r.total} images, check true on ${r.ours}`).join('\n');
  };
  const mark = (o: Outcome) => `${o.zbar.length ? 'z' : '-'}${o.opencv.length ? 'o' : '-'}${o.zbarViews.length ? 'Z' : '-'}${o.opencvViews.length ? 'O' : '-'}${o.ours.scannable ? '+' : '.'}`;
  const perCase = new Map<string, string[]>();
  for (const o of outcomes) perCase.set(o.c.name, [...(perCase.get(o.c.name) ?? []), mark(o)]);
  console.log(
    [
      `scan check vs referees, ${outcomes.length} images`,
      '  referees on the image as given:',
      table((o) => o.zbar.length > 0, (o) => o.opencv.length > 0),
      '  referees on the image or a camera-like view:',
      table((o) => o.zbarViews.length > 0, (o) => o.opencvViews.length > 0),
      '  per case (z/o: ZBar/OpenCV on the image, Z/O: on some view, +: check true):',
      ...[...perCase].map(([n, v]) => `    ${n.padEnd(26)} ${v.join(' ')}`),
    ].join('\n'),
  );
}
