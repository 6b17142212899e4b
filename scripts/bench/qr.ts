/**
 * The QR layer on one core: control-image render time and scan-check time per image.
 *   npm run bench -- qr [--runs 50]
 * Targets (median): render <= 15 ms at SD, <= 150 ms at UltraHD; scan check <= 40 ms at SD,
 * <= 200 ms at UltraHD, for scannable and unscannable images alike.
 */
import { parseArgs } from 'node:util';
import { wholeNumber } from './usage-error.ts';
import sharp from 'sharp';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import type { QrCodePattern } from '../../src/workflows/catalogue.ts';
import { outputSize, type AspectRatio, type Resolution } from '../../src/workflows/sizes.ts';
import { benchScanCheck, summarize } from './scan-check.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '50' } }, allowPositionals: true });
const runs = wholeNumber('runs', values.runs, 1);
// One core: libvips (used only to build the scan fixtures) gets a single thread too.
sharp.concurrency(1);

const CONTENT = 'https://example.com/qr-art/bench?id=0123456789';
const SIZES: ReadonlyArray<[AspectRatio, Resolution]> = [['1:1', 'SD'], ['16:9', 'UltraHD'], ['4:3', 'UltraHD']];
const PATTERNS: readonly QrCodePattern[] = ['s1', 'rd2', 'd3', 'r1', 'c2', 'sq3'];

const rows: Array<{ case: string; medianMs: number; p95Ms: number }> = [];
for (const [aspectRatio, resolution] of SIZES) {
  const canvas = outputSize(aspectRatio, resolution);
  for (const pattern of PATTERNS) {
    const options = { content: CONTENT, pattern, canvas, placement: placementFor(canvas, 0.6), background: 'gray' } as const;
    renderControlImage(options); // warm-up: JIT and tile caches
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const start = performance.now();
      renderControlImage(options);
      times.push(performance.now() - start);
    }
    rows.push({ case: `render ${aspectRatio} ${resolution} (${canvas.width}x${canvas.height}) ${pattern}`, ...summarize(times) });
  }
}
for (const [name, figures] of Object.entries(await benchScanCheck())) rows.push({ case: `scan check ${name}`, ...figures });

console.log(`QR layer, ${runs} runs per render case, one thread, Node ${process.version}`);
console.table(rows.map((r) => ({ case: r.case, 'median ms': r.medianMs.toFixed(2), 'p95 ms': r.p95Ms.toFixed(2) })));
