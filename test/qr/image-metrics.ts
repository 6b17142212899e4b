/**
 * How much a repair changed an image: SSIM (Wang et al. 2004: 11x11 Gaussian window, sigma 1.5,
 * K1 0.01, K2 0.03, on BT.601 luminance) and the share of pixels changed. Used by the repair
 * tests and `npm run bench -- scan`.
 */
import { toLuma } from '../../src/image/luma.ts';
import type { RawImage } from '../../src/image/raw.ts';

export interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

const RADIUS = 5;
const KERNEL = (() => {
  const k = Array.from({ length: 2 * RADIUS + 1 }, (_, i) => Math.exp(-((i - RADIUS) ** 2) / (2 * 1.5 * 1.5)));
  const sum = k.reduce((a, b) => a + b, 0);
  return Float64Array.from(k, (v) => v / sum);
})();

/** Separable Gaussian of a float plane (edges repeated). */
function gauss(src: Float64Array, w: number, h: number): Float64Array {
  const mid = new Float64Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let s = 0;
      for (let k = -RADIUS; k <= RADIUS; k++) s += KERNEL[k + RADIUS]! * src[y * w + Math.min(w - 1, Math.max(0, x + k))]!;
      mid[y * w + x] = s;
    }
  }
  const out = new Float64Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let s = 0;
      for (let k = -RADIUS; k <= RADIUS; k++) s += KERNEL[k + RADIUS]! * mid[Math.min(h - 1, Math.max(0, y + k)) * w + x]!;
      out[y * w + x] = s;
    }
  }
  return out;
}

/** Mean SSIM of the two images' luminance over `rect` (default: the whole image). */
export function ssim(a: RawImage, b: RawImage, rect?: Rect): number {
  const r = rect ?? { x: 0, y: 0, width: a.width, height: a.height };
  return ssimSum(a, b, r) / (r.width * r.height);
}

/**
 * Whole-image mean SSIM when the images differ only inside `changed`: windows wholly outside it
 * compare identical pixels (SSIM exactly 1), so only `changed` grown by the window's reach is
 * computed. Also returns the mean over `inner` (inside `changed`) from the same pass.
 */
export function ssimWhereChanged(a: RawImage, b: RawImage, changed: Rect, inner: Rect): { whole: number; inner: number } {
  const reach = 2 * RADIUS + 1;
  const x0 = Math.max(0, changed.x - reach);
  const y0 = Math.max(0, changed.y - reach);
  const grown = { x: x0, y: y0, width: Math.min(a.width, changed.x + changed.width + reach) - x0, height: Math.min(a.height, changed.y + changed.height + reach) - y0 };
  const map = ssimMap(a, b, grown);
  let sum = 0;
  let innerSum = 0;
  for (let y = 0; y < grown.height; y++) {
    for (let x = 0; x < grown.width; x++) {
      const v = map[y * grown.width + x]!;
      sum += v;
      const ix = grown.x + x;
      const iy = grown.y + y;
      if (ix >= inner.x && iy >= inner.y && ix < inner.x + inner.width && iy < inner.y + inner.height) innerSum += v;
    }
  }
  const total = a.width * a.height;
  return { whole: (sum + (total - grown.width * grown.height)) / total, inner: innerSum / (inner.width * inner.height) };
}

function ssimSum(a: RawImage, b: RawImage, r: Rect): number {
  return ssimMap(a, b, r).reduce((s, v) => s + v, 0);
}

/** The SSIM map over `r` (windows clipped to `r`'s edges, as if the image ended there). */
function ssimMap(a: RawImage, b: RawImage, r: Rect): Float64Array {
  if (a.width !== b.width || a.height !== b.height) throw new RangeError('ssim needs images of the same size');
  const la = toLuma(a).data;
  const lb = toLuma(b).data;
  const { width: w, height: h } = r;
  const n = w * h;
  const A = new Float64Array(n);
  const B = new Float64Array(n);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const s = (r.y + y) * a.width + r.x + x;
      A[y * w + x] = la[s]!;
      B[y * w + x] = lb[s]!;
    }
  }
  const AA = A.map((v) => v * v);
  const BB = B.map((v) => v * v);
  const AB = A.map((v, i) => v * B[i]!);
  const [ma, mb, saa, sbb, sab] = [A, B, AA, BB, AB].map((p) => gauss(p, w, h)) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
  const c1 = (0.01 * 255) ** 2;
  const c2 = (0.03 * 255) ** 2;
  const map = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const va = saa[i]! - ma[i]! * ma[i]!;
    const vb = sbb[i]! - mb[i]! * mb[i]!;
    const cov = sab[i]! - ma[i]! * mb[i]!;
    map[i] = ((2 * ma[i]! * mb[i]! + c1) * (2 * cov + c2)) / ((ma[i]! * ma[i]! + mb[i]! * mb[i]! + c1) * (va + vb + c2));
  }
  return map;
}

/** Share of pixels (within `rect`, default the whole image) whose value differs in any channel. */
export function changedShare(a: RawImage, b: RawImage, rect?: Rect): number {
  const r = rect ?? { x: 0, y: 0, width: a.width, height: a.height };
  const c = a.channels;
  let changed = 0;
  for (let y = r.y; y < r.y + r.height; y++) {
    for (let x = r.x; x < r.x + r.width; x++) {
      const s = (y * a.width + x) * c;
      for (let k = 0; k < c; k++) {
        if (a.data[s + k] !== b.data[s + k]) {
          changed++;
          break;
        }
      }
    }
  }
  return changed / (r.width * r.height);
}
