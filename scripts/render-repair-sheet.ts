/**
 * Writes a sheet of repaired images next to the images as generated, from what the scan bench
 * wrote with --pairs: `count` pairs taken at even steps through the pairs sorted by the code
 * square's SSIM, so the sheet runs from the most changed code to the least, not a chosen few.
 *
 *   npm run bench -- scan --images 40 --pairs /tmp/pairs
 *   npx tsx scripts/render-repair-sheet.ts --pairs /tmp/pairs [--count 6] [--out docs/scan-repair-examples.png]
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp, { type OverlayOptions } from 'sharp';
import type { RepairPair } from './bench/scan-report.ts';
import { sheetText } from './sheet-text.ts';

const CELL = 360;
const GAP = 20;
const LABEL = 30;
const TITLE = 44;
const SUBTITLE = 28;
const HEAD = 36;

const { values } = parseArgs({
  options: {
    pairs: { type: 'string' },
    count: { type: 'string', default: '6' },
    out: { type: 'string', default: resolve(dirname(fileURLToPath(import.meta.url)), '../docs/scan-repair-examples.png') },
  },
});
if (!values.pairs) throw new Error('--pairs DIR is required: the folder `npm run bench -- scan --pairs DIR` wrote');
const count = Number(values.count);
if (!(Number.isInteger(count) && count >= 1)) throw new Error('--count must be a positive integer');

const indexes = (await readdir(values.pairs)).filter((file) => /^pairs-\d+\.json$/.test(file));
if (indexes.length === 0) throw new Error(`${values.pairs} has no pairs-I.json: run the scan bench with --pairs ${values.pairs}`);
const all = (await Promise.all(indexes.map(async (file) => JSON.parse(await readFile(join(values.pairs!, file), 'utf8')) as RepairPair[]))).flat();
const sorted = [...all].sort((a, b) => a.ssimCode - b.ssimCode);
const picked = sorted.length <= count ? sorted : Array.from({ length: count }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / (count - 1 || 1))]!);

/** An image scaled to fit CELL x CELL (PNG bytes and the size it came to). */
async function fitted(file: string): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(file).resize(CELL, CELL, { fit: 'inside' }).png().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

const width = 2 * CELL + 3 * GAP;
const mean = (pick: (pair: RepairPair) => number): string => (all.reduce((sum, pair) => sum + pick(pair), 0) / all.length).toFixed(3);
const layers: OverlayOptions[] = [
  { input: sheetText(width, TITLE, `Scan repair on the demo graphs: ${picked.length} of ${all.length} repaired images`, 19, 'bold'), left: 0, top: 0 },
  { input: sheetText(width, SUBTITLE, `least to most of the code square kept; mean SSIM of the ${all.length}: image ${mean((p) => p.ssim)}, code square ${mean((p) => p.ssimCode)}`, 15), left: 0, top: TITLE },
  { input: sheetText(CELL, HEAD, 'as generated', 17, 'bold'), left: GAP, top: TITLE + SUBTITLE },
  { input: sheetText(CELL, HEAD, 'delivered (repaired)', 17, 'bold'), left: 2 * GAP + CELL, top: TITLE + SUBTITLE },
];
let top = TITLE + SUBTITLE + HEAD;
for (const pair of picked) {
  const before = await fitted(join(values.pairs, `${pair.name}-before.png`));
  const after = await fitted(join(values.pairs, `${pair.name}-after.png`));
  const inset = Math.floor((CELL - before.width) / 2);
  layers.push({ input: before.data, left: GAP + inset, top }, { input: after.data, left: 2 * GAP + CELL + inset, top });
  const label = `${pair.workflow.replace('generate_qr_art_', '')} ${pair.size}: SSIM image ${pair.ssim.toFixed(3)}, code square ${pair.ssimCode.toFixed(3)}; ${(100 * pair.changed).toFixed(1)}% of pixels changed, ${pair.passes} pass${pair.passes === 1 ? '' : 'es'}`;
  layers.push({ input: sheetText(width, LABEL, label, 15), left: 0, top: top + before.height });
  top += before.height + LABEL + GAP;
}
const height = top;

await sharp({ create: { width, height, channels: 3, background: '#ffffff' } }).composite(layers).png({ compressionLevel: 9, palette: true, quality: 95 }).toFile(values.out);
console.log(`wrote ${values.out} (${width}x${height}, ${picked.length} of ${all.length} pairs)`);
