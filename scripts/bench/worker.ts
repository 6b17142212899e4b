/**
 * The worker's job path on CPU: v5 1:1 SD jobs (768×768, one image) through
 * DiffusionRunner.runDetailed, i.e. control image, the inference thread (tokenize + text encoder,
 * ControlNet + UNet per step, VAE, NSFW), scan check and PNG, as the daemon runs them.
 *   npm run bench -- worker [--jobs N] [--steps S] [--heavy] [--convs K] [--threads T] [--batch B] [--qr-repair MODE] [--system-malloc]
 *
 * Figures:
 *   - stage medians (ms) from runDetailed's timings, per step for ControlNet/UNet/scheduler;
 *   - model time: the sum of ONNX Runtime session.run() wall times inside the job, measured in
 *     the inference thread itself by a preload (ort-run-timing.cjs) that wraps
 *     InferenceSession.prototype.run; the bench re-executes itself with it;
 *   - overhead ratio = job wall time (runDetailed, awaited from the main thread) / model time,
 *     and non-model ms = wall − model time, with the inference thread's GC pauses inside it
 *     shown apart (ORT hands every output over as a fresh ArrayBuffer: the ControlNet's 13
 *     residuals are ~120 MB per step at 768², and V8 collects after each such allocation);
 *   - images per minute (jobs one after another);
 *   - RSS of the process (main + inference thread + ORT) and V8 heaps of both threads at job
 *     1, N/2 and N.
 * Targets: non-model time <= 60 ms per SD image (job non-model time / --batch); overhead ratio <= 1.05 with --heavy (a UNet
 * with a stack of C=320 3×3 convolutions at latent resolution, scripts/demo-models/heavy-unet.ts,
 * same outputs as the demo UNet); RSS growth < 10% from job 1 to job N (N = 200 with --jobs 200).
 * Default: 20 jobs, 10 steps, one ONNX thread (--threads).
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BroadcastChannel } from 'node:worker_threads';
import { pino } from 'pino';
import { writeHeavyModels } from '../demo-models/heavy-unet.ts';
import type { JobMessage } from '../../src/queue/schemas.ts';
import { DiffusionRunner } from '../../src/worker/diffusion-runner.ts';
import { FinishPool } from '../../src/worker/finish-pool.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { summarize } from './scan-check.ts';

const PRELOAD = fileURLToPath(new URL('./ort-run-timing.cjs', import.meta.url));
const CHANNEL = 'qr-art-ort-run-timing';

/**
 * What Dockerfile.cuda sets for the worker: a fixed 1 MiB mmap threshold, so ONNX Runtime's
 * per-run output buffers (~120 MB a step) go back to the kernel when freed instead of
 * fragmenting malloc's heap (RSS otherwise climbs by a few hundred MB before it levels off).
 */
const WORKER_GLIBC_TUNABLES = 'glibc.malloc.mmap_threshold=1048576';

// The inference thread must start with the preload: re-execute this bench with it (and with the
// worker image's malloc setting, unless --system-malloc or GLIBC_TUNABLES says otherwise).
if (process.env.QR_ART_BENCH_ORT_TIMING !== '1') {
  const args = [...process.execArgv, '--require', PRELOAD, process.argv[1]!, 'worker', ...process.argv.slice(2)];
  const malloc = process.argv.includes('--system-malloc') || process.env.GLIBC_TUNABLES !== undefined ? {} : { GLIBC_TUNABLES: WORKER_GLIBC_TUNABLES };
  const child = spawnSync(process.execPath, args, { stdio: 'inherit', env: { ...process.env, ...malloc, QR_ART_BENCH_ORT_TIMING: '1' } });
  process.exit(child.status ?? 1);
}

const { values } = parseArgs({
  options: {
    jobs: { type: 'string' },
    steps: { type: 'string', default: '10' },
    heavy: { type: 'boolean', default: false },
    convs: { type: 'string', default: '1' },
    threads: { type: 'string', default: '1' },
    batch: { type: 'string', default: '1' },
    'system-malloc': { type: 'boolean', default: false },
    'qr-repair': { type: 'string' },
  },
  allowPositionals: true,
});
const jobs = Number(values.jobs ?? 20);
const steps = Number(values.steps);
const threads = Number(values.threads);
const batch = Number(values.batch);
if (!(jobs >= 2 && steps >= 1 && threads >= 1 && batch >= 1 && batch <= 4)) throw new Error('need --jobs >= 2, --steps >= 1, --threads >= 1, --batch 1..4');

// ONNX session.run() calls, as the preload in the inference thread reports them.
interface OrtRun {
  readonly start: number;
  readonly end: number;
  readonly graph: string;
  readonly heapUsed: number;
}
/** A garbage-collection pause in the inference thread. */
interface GcPause {
  readonly start: number;
  readonly ms: number;
}
interface ThreadRecords {
  readonly runs: OrtRun[];
  readonly gcs: GcPause[];
}
const channel = new BroadcastChannel(CHANNEL);
let flushed: ((records: ThreadRecords) => void) | undefined;
channel.onmessage = (event) => flushed?.((event as { data: ThreadRecords }).data);
/**
 * The thread's records since the last flush. Called between jobs, when the thread is idle, so
 * they are exactly the last job's (no clock comparison across threads) and no job pays for the
 * messages.
 */
const flush = (): Promise<ThreadRecords> =>
  new Promise((resolve) => {
    flushed = resolve;
    channel.postMessage('flush');
  });

let tempDir: string | undefined;
let manifestPath = DEFAULT_MANIFEST_PATH;
if (values.heavy) {
  tempDir = await mkdtemp(join(tmpdir(), 'qr-art-heavy-'));
  manifestPath = await writeHeavyModels(tempDir, { convs: Number(values.convs), channels: 320 });
}

const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
const client = await InferenceClient.start({ manifestPath, executionProvider: { provider: 'cpu' }, logger, intraOpThreads: threads });
const finishing = new FinishPool();
const runner = new DiffusionRunner({ inference: client, finishing, logger, policy: { allowPrivate: false } });

function job(i: number): JobMessage {
  const body = { workflow: 'generate_qr_art_v5', prompt: 'a blue koi pond, watercolor', qrContent: `https://example.com/qr-art/bench/${i}`, aspectRatio: '1:1', resolution: 'SD', steps, batchSize: batch, seed: 1000 + i, ...(values['qr-repair'] ? { qrRepair: values['qr-repair'] } : {}) };
  const parsed = parseCreateBody(body, { allowPrivateUrls: false });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const { workflow, input, imageCount } = parsed.value;
  return { id: `bench-${i}`, userId: 'bench', workflow, input, imageCount, createdAt: new Date().toISOString() };
}

interface JobRecord {
  readonly wall: number;
  readonly thread: ThreadRecords;
  readonly timings: Record<string, number>;
  readonly scannable: number;
  readonly images: number;
}
interface MemoryRecord {
  readonly job: number;
  readonly rss: number;
  readonly mainHeap: number;
  readonly external: number;
  readonly threadHeap: number | undefined;
}

const records: JobRecord[] = [];
const memory: MemoryRecord[] = [];
const checkpoints = new Set([1, Math.min(10, jobs), Math.round(jobs / 2), jobs]);
let size = '';

// One warm-up job (not counted): JIT, tile caches, ORT arenas at this size.
await runner.runDetailed(job(-1));
await flush();

const benchStart = performance.now();
for (let i = 1; i <= jobs; i++) {
  const start = performance.now();
  const run = await runner.runDetailed(job(i));
  const wall = performance.now() - start;
  if (run.outcome.kind !== 'images') throw new Error(`job ${i}: ${run.outcome.kind}`);
  size = `${run.width}x${run.height}`;
  const thread = await flush();
  records.push({ wall, thread, timings: run.timings, scannable: run.outcome.images.filter((im) => im.isScannable).length, images: run.outcome.images.length });
  if (checkpoints.has(i)) {
    const m = process.memoryUsage();
    memory.push({ job: i, rss: m.rss, mainHeap: m.heapUsed, external: m.external + m.arrayBuffers, threadHeap: thread.runs.at(-1)?.heapUsed });
  }
}
const benchWall = performance.now() - benchStart;
await client.close();
channel.close();
if (tempDir) await rm(tempDir, { recursive: true, force: true });

/** Milliseconds of the pause that fall inside any of the runs. */
function overlap(pause: GcPause, inside: readonly OrtRun[]): number {
  const end = pause.start + pause.ms;
  return inside.reduce((sum, x) => sum + Math.max(0, Math.min(end, x.end) - Math.max(pause.start, x.start)), 0);
}

// Model time per job: its session.run() calls.
const measured = records.map((r) => {
  const { runs, gcs } = r.thread;
  const byGraph: Record<string, number> = {};
  for (const x of runs) byGraph[x.graph] = (byGraph[x.graph] ?? 0) + (x.end - x.start);
  const model = runs.reduce((s, x) => s + (x.end - x.start), 0);
  // GC pauses between session.run() calls (some happen inside one, as its outputs are allocated: model time).
  const gc = gcs.reduce((sum, g) => sum + g.ms - overlap(g, runs), 0);
  return { wall: r.wall, model, gc, calls: runs.length, byGraph, timings: r.timings };
});
const expectedCalls = 1 + 2 * steps + batch + 1; // text encoder, ControlNet + UNet per step, VAE per image, safety checker
const perJob = measured.filter((j) => j.calls === expectedCalls);
const badCalls = measured.length - perJob.length;

const med = (xs: readonly number[]): number => summarize(xs).medianMs;
const p95 = (xs: readonly number[]): number => summarize(xs).p95Ms;
const stage = (key: string, per = 1) => perJob.map((j) => (j.timings[key] ?? 0) / per);
const ort = (graph: string, per = 1) => perJob.map((j) => (j.byGraph[graph] ?? 0) / per);
const derived = {
  controlRender: perJob.map((j) => j.timings.qr_render!),
  messaging: perJob.map((j) => j.timings.inference! - Object.entries(j.timings).filter(([k]) => !['inference', 'total', 'scan', 'png', 'finish', 'qr_render'].includes(k)).reduce((s, [, v]) => s + v, 0)),
  outside: perJob.map((j) => j.wall - j.timings.total!),
};
const row = (name: string, xs: readonly number[], model?: readonly number[]) => ({
  stage: name,
  'median ms': med(xs).toFixed(2),
  'p95 ms': p95(xs).toFixed(2),
  'session.run median ms': model ? med(model).toFixed(2) : '',
});
const table = [
  row('control image render + setup (main)', derived.controlRender),
  row('tokenize + text encoder', stage('text_encoder'), ort('text_encoder')),
  row('control planes (thread)', stage('control_planes')),
  row('ControlNet, per step', stage('controlnet', steps), ort('controlnet', steps)),
  row('UNet, per step', stage('unet', steps), ort('unet', steps)),
  row('scheduler + CFG, per step', stage('scheduler', steps)),
  row('VAE decode', stage('vae_decode'), ort('vae_decoder')),
  row('NSFW (crop + checker)', stage('nsfw'), ort('safety_checker')),
  row('thread messaging + untimed thread work', derived.messaging),
  row('scan check + repair (main, overlaps the thread)', stage('scan')),
  row('PNG encode (libuv pool, overlaps)', stage('png')),
  row('scan, repair + PNG left after the thread', stage('finish')),
  row('runDetailed total', stage('total')),
  row('job wall (bench)', perJob.map((j) => j.wall), perJob.map((j) => j.model)),
  row('non-model = wall − session.run', perJob.map((j) => j.wall - j.model)),
  row('  of which GC pauses between runs (thread)', perJob.map((j) => j.gc)),
  row('  non-model without GC pauses', perJob.map((j) => j.wall - j.model - j.gc)),
];

const walls = perJob.map((j) => j.wall);
const ratio = med(perJob.map((j) => j.wall / j.model));
const nonModel = med(perJob.map((j) => (j.wall - j.model) / batch));
const imagesPerMinute = (records.reduce((s, r) => s + r.images, 0) / benchWall) * 60_000;
const first = memory[0]!;
const last = memory.at(-1)!;
const growth = ((last.rss - first.rss) / first.rss) * 100;
// From job 10 on: what keeps growing once the allocator and ORT's arenas have reached their working set.
const tenth = memory.find((m) => m.job === 10);
const steadyGrowth = tenth && jobs > 10 ? ((last.rss - tenth.rss) / tenth.rss) * 100 : undefined;
const mb = (b: number | undefined) => (b === undefined ? 'n/a' : (b / 2 ** 20).toFixed(1));

console.log(
  `\nWorker job path: v5 1:1 SD (${size}), batch ${batch}, qrRepair ${values['qr-repair'] ?? 'on_failure (default)'}, ${steps} steps, ${jobs} jobs, ${values.heavy ? `HEAVY UNet (${values.convs}×conv3x3 C=320)` : 'demo graphs'}, ` +
    `CPU, ${threads} ONNX thread(s), Node ${process.version}, GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES ?? '(none)'}`,
);
console.table(table);
console.table(
  memory.map((m) => ({ job: m.job, 'RSS MB': mb(m.rss), 'main heap MB': mb(m.mainHeap), 'main external+ab MB': mb(m.external), 'thread heap MB': mb(m.threadHeap) })),
);
console.log(
  `images/min ${imagesPerMinute.toFixed(1)}; job wall median ${med(walls).toFixed(1)} ms; session.run calls per job ${expectedCalls}` +
    (badCalls ? ` (${badCalls} jobs left out: not the expected session.run calls)` : '') +
    `; scannable ${records.reduce((s, r) => s + r.scannable, 0)}/${records.reduce((s, r) => s + r.images, 0)}`,
);
const verdicts = [
  `non-model per image ${nonModel.toFixed(1)} ms (<= 60): ${nonModel <= 60 ? 'MET' : 'MISSED'}`,
  values.heavy ? `overhead ratio ${ratio.toFixed(3)} (<= 1.05): ${ratio <= 1.05 ? 'MET' : 'MISSED'}` : `overhead ratio ${ratio.toFixed(2)} (target applies to --heavy only)`,
  `RSS growth job 1→${jobs} ${growth.toFixed(1)}% (< 10%${jobs < 200 ? `, target is over 200 jobs` : ''}): ${growth < 10 ? 'MET' : 'MISSED'}` +
    (steadyGrowth !== undefined ? ` (job 10→${jobs}: ${steadyGrowth.toFixed(1)}%)` : ''),
];
console.log(`targets: ${verdicts.join('; ')}`);
