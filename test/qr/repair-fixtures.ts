/**
 * What the repair tests draw: art-like renderings of a code (a smooth colour field pulled toward
 * the code, some modules covered), a clean two-colour code, grey codes shaded module by module,
 * and one held-out capture from the family read by ZBar and OpenCV (decoders we did not write).
 * Seeded, so every run sees the same images.
 */
import { expect } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import type { LumaImage } from '../../src/image/luma.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { ModuleRole } from '../../src/qr/encode.ts';
import type { QrLayout } from '../../src/qr/layout.ts';
import { familyParams, simulateCapture } from '../../src/qr/capture-family.ts';
import type { QrGeometry } from '../../src/qr/guarantee.ts';
import { CHECK_SEED } from '../../src/qr/robustness.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import type { QrCodePattern } from '../../src/workflows/catalogue.ts';
import { opencvDecode, zbarDecode } from '../helpers/independent-decoders.ts';

export const CONTENT = 'https://qr-art.example/p/8f14e45f';

export interface Fixture {
  readonly image: RawImage;
  readonly geometry: QrGeometry;
  readonly codeSide: number;
}

export interface ArtOptions {
  readonly content?: string;
  readonly pattern?: QrCodePattern;
  readonly size?: number;
  readonly ratio?: number;
  readonly placement?: { x: number; y: number; side: number };
  /** How much the code shows through the colour field, 0..1. */
  readonly strength?: number;
  /** Share of data modules where the field ignores the code entirely. */
  readonly covered?: number;
  readonly seed?: number;
}

/** A smooth, saturated colour field (slow sinusoids per channel), like the demo models' art. */
function field(size: number, random: () => number): Float64Array {
  const out = new Float64Array(size * size * 3);
  const f = [0, 1, 2].map(() => [0.004 + random() * 0.01, 0.004 + random() * 0.01, random() * 6]);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      for (let c = 0; c < 3; c++) {
        const [fx, fy, p] = f[c]!;
        out[(y * size + x) * 3 + c] = 128 + 110 * Math.sin(x * fx! + p!) * Math.cos(y * fy! - p!);
      }
    }
  }
  return out;
}

/** Art-like rendering of a code: the colour field pulled toward the code by `strength`, some modules covered. */
export function artLike(options: ArtOptions = {}): Fixture {
  const size = options.size ?? 480;
  const random = mulberry32(options.seed ?? 11);
  const canvas = { width: size, height: size };
  const placement = options.placement ?? placementFor(canvas, options.ratio ?? 0.8);
  const control = renderControlImage({ content: options.content ?? CONTENT, pattern: options.pattern ?? 's1', canvas, placement, background: 'gray' });
  const { matrix, layout } = control;
  const covered = new Uint8Array(matrix.size * matrix.size);
  for (let i = 0; i < covered.length; i++) if (matrix.role[i] === ModuleRole.Data && random() < (options.covered ?? 0)) covered[i] = 1;
  const base = field(size, random);
  const strength = options.strength ?? 0.5;
  const data = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const mx = Math.floor((x - layout.codeX) / layout.moduleSize);
      const my = Math.floor((y - layout.codeY) / layout.moduleSize);
      const hidden = mx >= 0 && my >= 0 && mx < matrix.size && my < matrix.size && covered[my * matrix.size + mx] === 1;
      const pull = hidden ? 0 : strength * (control.image.data[y * size + x]! - 128);
      for (let c = 0; c < 3; c++) data[(y * size + x) * 3 + c] = Math.max(0, Math.min(255, Math.round(base[(y * size + x) * 3 + c]! + pull)));
    }
  }
  return { image: rawImage(data, size, size, 3), geometry: { matrix, layout, control: control.image }, codeSide: layout.codePixels };
}

/** The plain code in two colours (every module right): by default deep blue modules on pale yellow. */
export function cleanCode(size = 400, dark: readonly number[] = [20, 30, 120], light: readonly number[] = [250, 240, 200]): Fixture {
  const canvas = { width: size, height: size };
  const control = renderControlImage({ content: CONTENT, pattern: 's1', canvas, placement: placementFor(canvas, 0.9), background: 'white' });
  const data = new Uint8Array(size * size * 3);
  for (let i = 0; i < size * size; i++) data.set(control.image.data[i]! < 128 ? dark : light, i * 3);
  return { image: rawImage(data, size, size, 3), geometry: { matrix: control.matrix, layout: control.layout, control: control.image }, codeSide: control.layout.codePixels };
}

/** Paints module (r, c) of the code (quiet zone at negative or >= size indices) with an RGB colour. */
export function paintModule(fixture: Fixture, r: number, c: number, rgb: readonly number[]): void {
  const { moduleSize: m, codeX, codeY } = fixture.geometry.layout;
  const { width } = fixture.image;
  for (let y = codeY + r * m; y < codeY + (r + 1) * m; y++) for (let x = codeX + c * m; x < codeX + (c + 1) * m; x++) fixture.image.data.set(rgb, (y * width + x) * 3);
}

/** Mean luminance of module (r, c) of the code (quiet zone at negative or >= size indices), over its square less `inset` of its side at each edge. */
export function moduleMean(luma: LumaImage, layout: QrLayout, r: number, c: number, inset = 0): number {
  const { moduleSize: m, codeX, codeY } = layout;
  const a = Math.round(m * inset);
  const b = Math.round(m * (1 - inset));
  let sum = 0;
  for (let y = a; y < b; y++) for (let x = a; x < b; x++) sum += luma.data[(codeY + r * m + y) * luma.width + codeX + c * m + x]!;
  return sum / (b - a) ** 2;
}

/** The grey level of the pixel at (dx, dy) inside module i (side m); undefined keeps the canvas's fill. */
export type Shade = (i: number, dx: number, dy: number, m: number) => number | undefined;

/**
 * A code drawn as grey art on a `fill` canvas (3 channels, code at 0.8 of the side), each module
 * pixel by the shade made for the code's matrix. Returns the control image it was laid out by too.
 */
export function shadedCode(content: string, pattern: QrCodePattern, size: number, fill: number, shadeFor: (matrix: QrGeometry['matrix']) => Shade): { image: RawImage; control: ReturnType<typeof renderControlImage> } {
  const canvas = { width: size, height: size };
  const control = renderControlImage({ content, pattern, canvas, placement: placementFor(canvas, 0.8), background: 'white' });
  const { matrix, layout } = control;
  const m = layout.moduleSize;
  const shade = shadeFor(matrix);
  const data = new Uint8Array(size * size * 3).fill(fill);
  for (let i = 0; i < matrix.size * matrix.size; i++) {
    const x0 = layout.codeX + (i % matrix.size) * m;
    const y0 = layout.codeY + Math.floor(i / matrix.size) * m;
    for (let dy = 0; dy < m; dy++) {
      for (let dx = 0; dx < m; dx++) {
        const v = shade(i, dx, dy, m);
        if (v !== undefined) data.fill(v, ((y0 + dy) * size + x0 + dx) * 3, ((y0 + dy) * size + x0 + dx) * 3 + 3);
      }
    }
  }
  return { image: rawImage(data, size, size, 3), control };
}

/** Whether (dx, dy) of a module of side m lies within `radius` (a share of the side) of its centre. */
export const inDot = (dx: number, dy: number, m: number, radius: number) => Math.hypot(dx + 0.5 - m / 2, dy + 0.5 - m / 2) <= radius * m;

export const exactly = (texts: readonly string[]) => texts.length > 0 && texts.every((t) => t === CONTENT);

/** One held-out capture from the family (seed offset so it is never the check's). */
export async function readAfterCapture(image: RawImage, geometry: QrGeometry, seed: number): Promise<{ zbar: boolean; opencv: boolean }> {
  const { placement, moduleSize } = geometry.layout;
  const familySeed = 1000 + seed;
  expect(familySeed).not.toBe(CHECK_SEED);
  const [params] = familyParams(familySeed, 1, { modules: placement.side / moduleSize });
  const capture = await simulateCapture(image, placement, params!, familySeed);
  return { zbar: exactly(await zbarDecode(capture.image)), opencv: exactly(await opencvDecode(capture.image)) };
}

export function hue(r: number, g: number, b: number): number {
  const max = Math.max(r, g, b);
  const d = max - Math.min(r, g, b);
  if (d === 0) return 0;
  const h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return (h * 60 + 360) % 360;
}
