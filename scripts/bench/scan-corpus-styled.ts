/**
 * A "collected" QR art set made here, without downloads: codes stylized by the image
 * operations published QR art is made of. Each image draws the code in one of our 18 module
 * patterns (src/qr/patterns.ts) and then
 *   - blend:     darkens/lightens a photo-like texture under the modules (most art QR codes);
 *   - halftone:  keeps only each module's central third as the code, the rest of the module a
 *                dithered picture (the "halftone QR" style);
 *   - dots:      a centre dot per module over the picture, finders drawn whole;
 *   - gradient:  dark and light modules in two colour gradients;
 *   - faint:     a low-contrast blend into a busy texture;
 * and at random: grain, a blur, a logo over the centre, JPEG. Strengths are drawn from ranges
 * wide enough that some images are read by every decoder and some by none. Seeded.
 */
import sharp from 'sharp';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { renderControlImage } from '../../src/qr/control-image.ts';
import { ModuleRole, type ErrorCorrectionLevel } from '../../src/qr/encode.ts';
import type { QrLayout } from '../../src/qr/layout.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { QR_CODE_PATTERNS } from '../../src/workflows/catalogue.ts';
import { captureParams, simulateCapture } from '../../test/qr/phone-capture.ts';
import type { CorpusImage } from './scan-corpus-files.ts';

const CONTENTS = [
  'https://example.com/r/7Hq2',
  'https://qr-art.example/p/8f14e45f',
  'HELLO WORLD 12345',
  'https://shop.example.com/products/winter-jacket?utm_source=qr&utm_medium=print',
  'WIFI:T:WPA;S:harbour-guest;P:k33p-it-dry;;',
  'mailto:hello@example.com?subject=QR%20art',
  'Grüße aus Köln – café',
];
const STYLES = ['blend', 'halftone', 'dots', 'gradient', 'faint'] as const;
type Style = (typeof STYLES)[number];

type Rgb = [number, number, number];
const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : Math.round(v));

/** Smooth colour field: three octaves of bilinear value noise per channel, like an out-of-focus photo. */
function photoTexture(width: number, height: number, random: () => number): Float32Array {
  const out = new Float32Array(width * height * 3);
  const base = [60 + random() * 140, 60 + random() * 140, 60 + random() * 140];
  for (const [cell, amplitude] of [[96, 90], [28, 45], [7, 20]] as const) {
    const gw = Math.ceil(width / cell) + 2;
    const gh = Math.ceil(height / cell) + 2;
    const grid = Float32Array.from({ length: gw * gh * 3 }, () => (random() - 0.5) * 2 * amplitude);
    for (let y = 0; y < height; y++) {
      const gy = y / cell;
      const y0 = Math.floor(gy);
      const fy = gy - y0;
      for (let x = 0; x < width; x++) {
        const gx = x / cell;
        const x0 = Math.floor(gx);
        const fx = gx - x0;
        const a = (y0 * gw + x0) * 3;
        const b = a + gw * 3;
        for (let c = 0; c < 3; c++) {
          // No closure here: the bundler wraps each one in a naming call, 10x slower per pixel.
          const top = grid[a + c]! * (1 - fx) + grid[a + 3 + c]! * fx;
          const bottom = grid[b + c]! * (1 - fx) + grid[b + 3 + c]! * fx;
          const o = (y * width + x) * 3 + c;
          out[o] = out[o]! + top * (1 - fy) + bottom * fy;
        }
      }
    }
  }
  for (let i = 0; i < out.length; i++) out[i] = Math.max(0, Math.min(255, out[i]! + base[i % 3]!));
  // Objects with sharp edges (disks and bars), as a photo or an illustration has.
  for (let k = 4 + Math.floor(random() * 10); k > 0; k--) {
    const colour = [random() * 255, random() * 255, random() * 255];
    const opacity = 0.4 + random() * 0.6;
    const cx = random() * width;
    const cy = random() * height;
    const r = 15 + random() * Math.min(width, height) * 0.2;
    const bar = random() < 0.4;
    for (let y = Math.max(0, Math.floor(cy - r)); y < Math.min(height, Math.ceil(cy + r)); y++) {
      for (let x = Math.max(0, Math.floor(cx - r)); x < Math.min(width, Math.ceil(cx + r)); x++) {
        const inside = bar ? Math.abs(y - cy) < r * 0.25 : (x - cx) ** 2 + (y - cy) ** 2 < r * r;
        if (!inside) continue;
        for (let c = 0; c < 3; c++) {
          const o = (y * width + x) * 3 + c;
          out[o] = out[o]! * (1 - opacity) + colour[c]! * opacity;
        }
      }
    }
  }
  return out;
}

const BAYER4 = [0, 8, 2, 10, 12, 4, 14, 6, 3, 11, 1, 9, 15, 7, 13, 5];

interface Drawn {
  /** Dark coverage of the pattern-drawn code, 0..1 per pixel (0 outside the code's square). */
  readonly coverage: Float32Array;
  readonly layout: QrLayout;
  readonly size: number;
  readonly dark: Uint8Array;
  readonly role: Uint8Array;
}

function drawCode(content: string, ecl: ErrorCorrectionLevel, pattern: (typeof QR_CODE_PATTERNS)[number], width: number, height: number, side: number): Drawn {
  const placement = { x: Math.floor((width - side) / 2), y: Math.floor((height - side) / 2), side };
  const control = renderControlImage({ content, pattern, canvas: { width, height }, placement, background: 'white', errorCorrectionLevel: ecl, quietZoneModules: 2 });
  const coverage = new Float32Array(width * height);
  for (let i = 0; i < coverage.length; i++) coverage[i] = 1 - control.image.data[i]! / 255;
  return { coverage, layout: control.layout, size: control.matrix.size, dark: control.matrix.dark, role: control.matrix.role };
}

/** Where (x, y) falls in the code: module index and position inside it (0..1), or null outside. */
function moduleAt(d: Drawn, x: number, y: number): { index: number; u: number; v: number } | null {
  const { codeX, codeY, moduleSize } = d.layout;
  const mx = Math.floor((x - codeX) / moduleSize);
  const my = Math.floor((y - codeY) / moduleSize);
  if (mx < 0 || my < 0 || mx >= d.size || my >= d.size) return null;
  return { index: my * d.size + mx, u: (x - codeX) / moduleSize - mx, v: (y - codeY) / moduleSize - my };
}

function inSquare(d: Drawn, x: number, y: number): boolean {
  const { x: px, y: py, side } = d.layout.placement;
  return x >= px && y >= py && x < px + side && y < py + side;
}

function stylize(style: Style, d: Drawn, texture: Float32Array, width: number, height: number, random: () => number): { pixels: Float32Array; detail: string } {
  const out = new Float32Array(texture);
  const strength = 0.15 + random() * 0.5;
  const solid = (role: number) => role === ModuleRole.Finder || role === ModuleRole.Alignment;
  let detail = `${style} s${strength.toFixed(2)}`;
  // Two gradients whose luminances come as close as ~50 levels.
  const dark: Rgb = [40 + random() * 110, 20 + random() * 90, 40 + random() * 110];
  const light: Rgb = [150 + random() * 105, 150 + random() * 105, 130 + random() * 125];
  const dark2: Rgb = [40 + random() * 110, 20 + random() * 90, 40 + random() * 110];
  const light2: Rgb = [150 + random() * 105, 130 + random() * 125, 150 + random() * 105];
  const dotFill = 0.3 + random() * 0.3;
  if (style === 'dots') detail += ` dot${dotFill.toFixed(2)}`;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (!inSquare(d, x, y)) continue;
      const i = y * width + x;
      const m = moduleAt(d, x, y);
      const cov = d.coverage[i]!;
      for (let c = 0; c < 3; c++) {
        const t = texture[i * 3 + c]!;
        let v: number;
        switch (style) {
          case 'blend':
            // The quiet zone is the picture lightened like the light modules: no clean frame.
            v = cov * t * (1 - strength) + (1 - cov) * (t + (255 - t) * strength * 0.8);
            break;
          case 'faint': {
            // A busy mid-grey picture; the code moves it by only ~20-60 levels.
            const mid = 128 + (t - 128) * 0.6;
            v = mid + (0.5 - cov) * (15 + 70 * strength);
            break;
          }
          case 'gradient': {
            const fx = x / width;
            const fy = y / height;
            const dc = dark[c]! * (1 - fx) + dark2[c]! * fx;
            const lc = light[c]! * (1 - fy) + light2[c]! * fy;
            v = 0.85 * (cov * dc + (1 - cov) * lc) + 0.15 * t;
            break;
          }
          case 'halftone':
          case 'dots': {
            if (!m || solid(d.role[m.index]!)) {
              v = cov * t * 0.15 + (1 - cov) * (t + (255 - t) * 0.85);
              break;
            }
            const isDark = d.dark[m.index] === 1;
            const inCentre = style === 'halftone' ? Math.abs(m.u - 0.5) < 1 / 6 && Math.abs(m.v - 0.5) < 1 / 6 : Math.hypot(m.u - 0.5, m.v - 0.5) < dotFill / 2;
            if (inCentre) v = isDark ? t * (0.6 - 0.5 * strength) : t + (255 - t) * (0.3 + 0.6 * strength);
            else if (style === 'dots') v = t * (1 - 0.3 * strength) + (isDark ? 0 : 40 * strength);
            else {
              // Ordered dither of the picture's luminance, in its own hue.
              const threshold = (BAYER4[(y % 4) * 4 + (x % 4)]! + 0.5) / 16;
              const l = (0.299 * texture[i * 3]! + 0.587 * texture[i * 3 + 1]! + 0.114 * texture[i * 3 + 2]!) / 255;
              v = l > threshold ? t + (255 - t) * 0.7 : t * 0.25;
            }
            break;
          }
        }
        out[i * 3 + c] = v;
      }
    }
  }
  return { pixels: out, detail };
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
}

/** A logo badge over the code's centre: a coloured rounded square with a white ring and a dark disk. */
function logo(pixels: Float32Array, width: number, d: Drawn, share: number, random: () => number): void {
  const { codeX, codeY, codePixels } = d.layout;
  const side = codePixels * share;
  const cx = codeX + codePixels / 2;
  const cy = codeY + codePixels / 2;
  const colour: Rgb = [random() * 255, random() * 255, random() * 255];
  const r = side / 2;
  for (let y = Math.floor(cy - r); y < Math.ceil(cy + r); y++) {
    for (let x = Math.floor(cx - r); x < Math.ceil(cx + r); x++) {
      const dx = Math.abs(x + 0.5 - cx);
      const dy = Math.abs(y + 0.5 - cy);
      const corner = Math.hypot(Math.max(0, dx - r * 0.7), Math.max(0, dy - r * 0.7));
      if (corner > r * 0.3) continue;
      const dist = Math.hypot(dx, dy);
      const fill: Rgb = dist < r * 0.35 ? [30, 30, 40] : dist < r * 0.5 ? [255, 255, 255] : colour;
      for (let c = 0; c < 3; c++) pixels[(y * width + x) * 3 + c] = fill[c]!;
    }
  }
}

/**
 * `count` stylized images, seeded; each at 512-768 px with the code over 55-90% of the short
 * side, each followed by its phone capture (test/qr/phone-capture.ts) when `captures` is set.
 */
export async function styledCorpus(count: number, seed = 5, captures = true): Promise<CorpusImage[]> {
  const random = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const out: CorpusImage[] = [];
  for (let k = 0; k < count; k++) {
    const width = 512 + 64 * Math.floor(random() * 5);
    const height = random() < 0.6 ? width : 512 + 64 * Math.floor(random() * 5);
    const side = Math.round(Math.min(width, height) * (0.55 + random() * 0.35));
    const content = pick(CONTENTS);
    const ecl = pick(['H', 'H', 'H', 'Q', 'M'] as const);
    const style = STYLES[k % STYLES.length]!;
    // Halftone and dots need a few pixels per sub-cell: module patterns stay solid there.
    const pattern = style === 'halftone' || style === 'dots' ? 's1' : pick(QR_CODE_PATTERNS);
    const d = drawCode(content, ecl, pattern, width, height, side);
    const { pixels, detail } = stylize(style, d, photoTexture(width, height, random), width, height, random);
    const steps = [`${detail} ${pattern} ${ecl} v${(d.size - 17) / 4}`];
    if (random() < 0.3) {
      const share = 0.16 + random() * 0.14;
      logo(pixels, width, d, share, random);
      steps.push(`logo${share.toFixed(2)}`);
    }
    const grain = 3 + random() * 9;
    const data = new Uint8Array(width * height * 3);
    for (let i = 0; i < width * height; i++) {
      const n = gaussian(random) * grain;
      for (let c = 0; c < 3; c++) data[i * 3 + c] = clamp(pixels[i * 3 + c]! + n);
    }
    let image = rawImage(data, width, height, 3);
    let pipeline = sharp(image.data, { raw: { width, height, channels: 3 } });
    let edited = false;
    if (random() < 0.35) {
      const sigma = Math.max(0.3, d.layout.moduleSize * (0.12 + random() * 0.3));
      pipeline = pipeline.blur(sigma);
      steps.push(`blur${sigma.toFixed(1)}`);
      edited = true;
    }
    if (random() < 0.3) {
      const quality = 45 + Math.floor(random() * 35);
      pipeline = sharp(await pipeline.jpeg({ quality }).toBuffer());
      steps.push(`jpeg${quality}`);
      edited = true;
    }
    if (edited) {
      const { data: raw, info } = await pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });
      image = rawImage(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength), info.width, info.height, 3);
    }
    const entry = { file: `styled-${k}`, expected: content, codeSide: d.layout.codePixels, kind: 'styled', style: steps.join(' '), image } as const;
    out.push(entry);
    if (captures) {
      const capture = await simulateCapture(image, d.layout.placement, captureParams(seed * 7919 + k), k);
      const codeSide = Math.round((capture.codeSide * d.layout.codePixels) / d.layout.placement.side);
      out.push({ ...entry, file: `styled-${k}-capture`, kind: 'styled-capture', codeSide, image: capture.image });
    }
  }
  return out;
}
