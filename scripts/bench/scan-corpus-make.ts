/**
 * Writes a corpus of generated QR art for the scan-check bench (scan-corpus.ts):
 *   npx tsx scripts/bench/scan-corpus-make.ts [--images 120] [--seed 11] [--steps 4] [--out data/scan-corpus/generated] [--threads 1]
 *
 * Each image is generated with the demo graphs through the worker's own path
 * (scan-corpus-jobs.ts, the jobs `npm run bench -- scan` uses) and kept as generated, not
 * repaired, whether the scan check reads it or not: the bench is about which of them a
 * decoder reads. Next to each image goes its phone capture (test/qr/phone-capture.ts: the
 * code at ~300 px, rotated, tilted, blurred, flatter, noisy, JPEG), which is what a phone's
 * decoder actually sees. corpus.json lists every file with its content and code side.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import sharp from 'sharp';
import { encodePng } from '../../src/image/decode.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import { captureParams, simulateCapture } from '../../test/qr/phone-capture.ts';
import { benchJobs, startJob, type StartedJob } from './scan-corpus-jobs.ts';
import type { CorpusEntry } from './scan-corpus-files.ts';
import { BenchUsageError } from './usage-error.ts';

const { values } = parseArgs({
  options: {
    images: { type: 'string', default: '120' },
    seed: { type: 'string', default: '11' },
    steps: { type: 'string', default: '4' },
    out: { type: 'string', default: 'data/scan-corpus/generated' },
    threads: { type: 'string', default: '1' },
  },
});
const total = Number(values.images);
const seed = Number(values.seed);
const steps = Number(values.steps);
if (!(Number.isInteger(total) && total >= 1)) throw new BenchUsageError('--images must be a positive integer');
sharp.concurrency(1);
await mkdir(values.out, { recursive: true });

const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
const client = await InferenceClient.start({ manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger, intraOpThreads: Number(values.threads) });
const jobs = benchJobs(total, mulberry32(seed));
const abort = new AbortController();
const entries: CorpusEntry[] = [];
const t0 = performance.now();

let next: Promise<StartedJob> = startJob(client, jobs[0]!, 0, steps, abort.signal);
for (let j = 0; j < jobs.length; j++) {
  const current = await next;
  const result = await current.generation;
  // The next generation runs in the inference thread while this one's files are written.
  if (j + 1 < jobs.length) next = startJob(client, jobs[j + 1]!, j + 1, steps, abort.signal);
  const { control, workflow, input } = current;
  const { expected, codeSide, geometry } = control;
  if (!geometry) throw new Error('content plans have geometry');
  const square = geometry.layout.placement;
  const about = { workflow: workflow.replace('generate_qr_art_', ''), pattern: String(input.qrCodePartern ?? 's1'), version: geometry.matrix.version };
  for (const image of result.images) {
    const name = String(entries.length / 2).padStart(3, '0');
    await writeFile(join(values.out, `${name}-art.png`), await encodePng(image));
    entries.push({ file: `${name}-art.png`, expected, codeSide, kind: 'art', ...about });
    const captureSeed = seed * 1_000_003 + entries.length;
    const capture = await simulateCapture(image, square, captureParams(captureSeed), captureSeed);
    await writeFile(join(values.out, `${name}-capture.png`), await encodePng(capture.image));
    entries.push({ file: `${name}-capture.png`, expected, codeSide: Math.round((capture.codeSide * codeSide) / square.side), kind: 'capture', ...about });
  }
  process.stderr.write(`\r${entries.length / 2}/${total} images`);
}
await client.close();
await writeFile(join(values.out, 'corpus.json'), `${JSON.stringify({ seed, steps, entries }, null, 1)}\n`);
process.stderr.write(`\n${entries.length} files in ${values.out} (${((performance.now() - t0) / 1000).toFixed(0)} s)\n`);
