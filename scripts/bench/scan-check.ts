/**
 * Scan-check timing: median and p95 of scanCheck over synthetic images, one core, in
 * process. "Scannable": a plain code (qrcode package, level H) on a textured, noisy canvas.
 * "Unscannable": the same image with its three finder patterns painted over with texture,
 * which makes every rung of the ladder run (the slow case). Seeded, so runs compare. A ladder
 * other than SCAN_LADDER can be timed the same way; reads per ladder on QR art are
 * scan-corpus.ts's.
 */
import QRCode from 'qrcode';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { scanCheck, type Rung, type ScanOptions } from '../../src/qr/scan.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

export interface Timing {
  medianMs: number;
  p95Ms: number;
  /** The slowest run. */
  maxMs?: number;
}

const CONTENT = 'https://qr-art.example/p/8f14e45f?utm_source=bench';


/** RGB canvas: soft colour waves plus pixel noise, the code (side px, centred) drawn over it. */
export function benchImage(width: number, height: number, side: number, finders: boolean, seed = 7): RawImage {
  const random = mulberry32(seed);
  const qr = QRCode.create(CONTENT, { errorCorrectionLevel: 'H' });
  const n = qr.modules.size;
  const x0 = Math.floor((width - side) / 2);
  const y0 = Math.floor((height - side) / 2);
  const quiet = side / n; // one module of quiet zone is left light, as a real render has more
  const phase = [random() * 6, random() * 6, random() * 6];
  // Separable texture: 128 + 90 sin(x..) cos(y..) per channel, from per-column/row tables.
  const sx = [0, 1, 2].map((c) => Float64Array.from({ length: width }, (_, x) => 90 * Math.sin(x * (0.011 + c * 0.004) + phase[c]!)));
  const cy = [0, 1, 2].map((c) => Float64Array.from({ length: height }, (_, y) => Math.cos(y * (0.009 + c * 0.003) + phase[c]!)));
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 3;
      const noise = (random() - 0.5) * 40;
      const mx = Math.floor(((x - x0) * n) / side);
      const my = Math.floor(((y - y0) * n) / side);
      const inCode = mx >= 0 && my >= 0 && mx < n && my < n;
      const inFinder = inCode && ((mx < 8 && my < 8) || (mx >= n - 8 && my < 8) || (mx < 8 && my >= n - 8));
      const nearCode = x >= x0 - quiet * 2 && y >= y0 - quiet * 2 && x < x0 + side + quiet * 2 && y < y0 + side + quiet * 2;
      for (let c = 0; c < 3; c++) {
        const texture = 128 + sx[c]![x]! * cy[c]![y]!;
        let v: number;
        if (inCode && (finders || !inFinder)) v = qr.modules.data[my * n + mx] ? 30 : 225;
        else if (nearCode && (finders || !inFinder)) v = 225;
        else v = texture;
        data[o + c] = Math.max(0, Math.min(255, Math.round(v + noise)));
      }
    }
  }
  return rawImage(data, width, height, 3);
}

async function time(image: RawImage, options: ScanOptions, runs: number, expectScannable: boolean): Promise<Timing> {
  const first = await scanCheck(image, CONTENT, options);
  if (first.scannable !== expectScannable) throw new Error(`bench image gave scannable=${first.scannable}, expected ${expectScannable}`);
  await scanCheck(image, CONTENT, options); // second warm-up: JIT
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await scanCheck(image, CONTENT, options);
    ms.push(performance.now() - start);
  }
  return { ...summarize(ms), maxMs: Math.max(...ms) };
}

/** Median and p95 (nearest rank) of durations in ms; callers format them. */
export function summarize(durations: readonly number[]): Timing {
  // Nothing measured (no image was repaired, say): NaN, which a report prints as such.
  if (durations.length === 0) return { medianMs: NaN, p95Ms: NaN };
  const ms = [...durations].sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.max(0, Math.ceil(q * ms.length) - 1))]!;
  return { medianMs: at(0.5), p95Ms: at(0.95) };
}

/**
 * Median/p95/max over `runs` runs per case, with SCAN_LADDER or the given ladder. Targets: SD
 * <= 40 ms, UltraHD <= 200 ms (median, scannable); the unscannable cases run the whole ladder.
 */
export async function benchScanCheck(runs = 30, ladder?: readonly Rung[]): Promise<Record<string, Timing>> {
  const sdSide = Math.round(768 * 0.8);
  const uhdSide = Math.round(2160 * 0.6);
  const options = (codeSide: number): ScanOptions => (ladder ? { codeSide, ladder } : { codeSide });
  return {
    'SD 768x768 scannable': await time(benchImage(768, 768, sdSide, true), options(sdSide), runs, true),
    'SD 768x768 unscannable': await time(benchImage(768, 768, sdSide, false), options(sdSide), runs, false),
    'UltraHD 3840x2160 scannable': await time(benchImage(3840, 2160, uhdSide, true), options(uhdSide), runs, true),
    'UltraHD 3840x2160 unscannable': await time(benchImage(3840, 2160, uhdSide, false), options(uhdSide), runs, false),
  };
}
