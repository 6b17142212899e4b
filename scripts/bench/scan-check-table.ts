/**
 *   npm run bench -- scan-check [--runs 30]
 * The scan check's time (median, p95, slowest) on synthetic scannable and unscannable codes at SD
 * and UltraHD, one core, in process (scan-check.ts measures; this prints). Targets: SD <= 40 ms,
 * UltraHD <= 200 ms (median, scannable).
 */
import { parseArgs } from 'node:util';
import { benchScanCheck } from './scan-check.ts';
import { BenchUsageError } from './usage-error.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' } } });
const runs = Number(values.runs);
if (!(Number.isInteger(runs) && runs >= 1)) throw new BenchUsageError('--runs must be a positive integer');
const rows = Object.entries(await benchScanCheck(runs)).map(([image, t]) => ({
  image,
  'median ms': t.medianMs.toFixed(1),
  'p95 ms': t.p95Ms.toFixed(1),
  'max ms': t.maxMs?.toFixed(1) ?? '',
}));
console.log(`scan check, ${runs} runs per image, one core`);
console.table(rows);
