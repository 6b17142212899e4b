/**
 * The worker as it runs in production: N v5 jobs (SD 1:1, 768×768) queued at once in JetStream
 * (a local nats-server) and taken by the worker daemon (prefetch, inference thread, finishing
 * pool, uploads, events), the way `qr-art worker` runs them.
 *
 *   npm run bench -- worker [--jobs 20] [--steps 10] [--batch 1] [--separate] [--heavy] [--convs K]
 *                           [--threads T] [--prefetch P] [--provider cpu|webgpu] [--qr-repair MODE] [--system-malloc]
 *
 * Figures:
 *   - boundary traffic: bytes of every tensor handed to or returned by a session.run that lives
 *     in host memory (inputs + outputs; device-resident 'gpu-buffer' tensors move none), per
 *     denoising step, measured by a preload in the inference thread (ort-run-timing.cjs; the
 *     bench re-executes itself with it); --separate runs the ControlNet + UNet pair instead of
 *     the fused denoiser;
 *   - job latency (the device starting it to its images being ready), images per minute
 *     (first job started to last `executed` event), session.run time per step and stage;
 *   - overhead ratio = wall time of the run / total session.run time (with --heavy: a UNet with
 *     real-sized convolutions, so the model dominates as on a GPU). session.run time is ONNX
 *     Runtime's work plus handing its outputs to JavaScript: a small share for the fused denoiser
 *     (its output is one latent), most of the ControlNet's with --separate (its 13 residuals: a
 *     reviewer's ORT profile gave 71-74% outside model_run), where the ratio is no model-time
 *     ratio and hides the hand-off the fused graph removes. Boundary traffic measures that;
 *   - inference thread idle share: wall time from the first job's start to the last job's end
 *     during which the thread had no request in progress, though jobs were queued;
 *   - RSS at the end.
 * Targets: traffic <= 10 MB per step at 768² batch 1; overhead ratio <= 1.02 with --heavy and
 * repair on; idle < 2% of wall time.
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
import { useSeparatePair, writeManifestVariant } from '../demo-models/manifest-variants.ts';
import { parseExecutionProvider } from '../../src/pipeline/providers.ts';
import { connectQueue } from '../../src/queue/connection.ts';
import type { JobMessage } from '../../src/messages/schemas.ts';
import { subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { startLocalNats } from '../../src/runtime/local-nats.ts';
import { startWorkerDaemon } from '../../src/worker/daemon.ts';
import { DiffusionRunner, type DetailedRun } from '../../src/worker/diffusion-runner.ts';
import { FinishPool } from '../../src/worker/finish-pool.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import type { JobRunner, RunHooks } from '../../src/worker/runner.ts';
import { catalogue } from '../../src/workflows/catalogue.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { summarize } from './scan-check.ts';
import { BenchUsageError, wholeNumber } from './usage-error.ts';

const PRELOAD = fileURLToPath(new URL('./ort-run-timing.cjs', import.meta.url));
const CHANNEL = 'qr-art-ort-run-timing';
/** What Dockerfile.cuda sets for the worker (see README). */
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
    jobs: { type: 'string', default: '20' },
    steps: { type: 'string', default: '10' },
    batch: { type: 'string', default: '1' },
    separate: { type: 'boolean', default: false },
    heavy: { type: 'boolean', default: false },
    convs: { type: 'string', default: '1' },
    threads: { type: 'string', default: '1' },
    prefetch: { type: 'string', default: '1' },
    provider: { type: 'string', default: 'cpu' },
    'qr-repair': { type: 'string' },
    'system-malloc': { type: 'boolean', default: false },
  },
  allowPositionals: true,
});
const jobs = wholeNumber('jobs', values.jobs, 2);
const steps = wholeNumber('steps', values.steps, 1);
const batch = wholeNumber('batch', values.batch, 1, 4);
const threads = wholeNumber('threads', values.threads, 1);
const prefetch = wholeNumber('prefetch', values.prefetch, 0);
const convs = wholeNumber('convs', values.convs, 1);
if (values.provider !== 'cpu' && values.provider !== 'webgpu') throw new BenchUsageError('--provider is cpu or webgpu (CUDA needs Dockerfile.cuda)');
// The jobs' body is the API's: a --steps or --qr-repair it refuses is said now, before any server starts.
job(0);

// ---------------------------------------------------------------------------------------------
// The inference thread's session.run records (the preload answers flushes on a BroadcastChannel)

interface OrtRun {
  readonly start: number;
  readonly end: number;
  readonly graph: string;
  readonly bytes: number;
}
const channel = new BroadcastChannel(CHANNEL);
let flushed: ((runs: OrtRun[]) => void) | undefined;
channel.onmessage = (event) => flushed?.((event as { data: { runs: OrtRun[] } }).data.runs);
const flush = (): Promise<OrtRun[]> =>
  new Promise((resolve) => {
    flushed = resolve;
    channel.postMessage('flush');
  });

// ---------------------------------------------------------------------------------------------
// The worker, its models and a local nats-server

const temp = await mkdtemp(join(tmpdir(), 'qr-art-bench-worker-'));
const variant = values.heavy
  ? await writeHeavyModels(temp, { convs, channels: 320, separate: values.separate })
  : values.separate
    ? await writeManifestVariant(temp, 'pair', useSeparatePair)
    : DEFAULT_MANIFEST_PATH;
const nats = await startLocalNats(join(temp, 'nats'));
const queue = await connectQueue(nats.url, 'qr-art-bench');
const MAX_DELIVER = 3;
await ensureTopology(queue.jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: MAX_DELIVER });
const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
const client = await InferenceClient.start({
  manifestPath: variant,
  executionProvider: parseExecutionProvider(values.provider as 'cpu' | 'webgpu'),
  logger,
  intraOpThreads: threads,
  warmUp: [{ width: 768, height: 768 }],
});
const finishing = new FinishPool();
const diffusion = new DiffusionRunner({ inference: client, finishing, logger, policy: { allowPrivate: false } });

/** Per job, on the main thread's clock: pulled (run called), device started, device done, run resolved; and the thread's own span. */
interface JobTimes {
  pulled: number;
  started?: number;
  deviceDone?: number;
  ran?: number;
  detail?: DetailedRun;
}
const times = new Map<string, JobTimes>();
const now = () => performance.timeOrigin + performance.now();
const recorder: JobRunner = {
  name: 'bench',
  async run(job: JobMessage, hooks: RunHooks) {
    const t: JobTimes = { pulled: now() };
    times.set(job.id, t);
    const detail = await diffusion.runDetailed(job, {
      ...hooks,
      onStart: () => ((t.started = now()), hooks.onStart?.()),
      onDeviceDone: () => ((t.deviceDone = now()), hooks.onDeviceDone?.()),
    });
    t.ran = now();
    t.detail = detail;
    return detail.outcome;
  },
};
const daemon = startWorkerDaemon({ queue, runner: recorder, logger, prefetch, maxInHand: 1 + prefetch + 2, heartbeatMs: 20_000, maxDeliver: MAX_DELIVER });

const executed = new Map<string, number>();
let onExecuted: (() => void) | undefined;
const sub = queue.nc.subscribe(subjects.eventsAll, {
  callback: (_err, msg) => {
    const event = msg.json<{ predictionId: string; status: string }>();
    if (event.status === 'executed' || event.status === 'failed') (executed.set(event.predictionId, now()), onExecuted?.());
  },
});

function job(i: number): JobMessage {
  const body = { workflow: 'generate_qr_art_v5', prompt: 'a blue koi pond, watercolor', qrContent: `https://example.com/qr-art/bench/${i}`, aspectRatio: '1:1', resolution: 'SD', steps, batchSize: batch, seed: 1000 + i, ...(values['qr-repair'] ? { qrRepair: values['qr-repair'] } : {}) };
  const parsed = parseCreateBody(body, { allowPrivateUrls: false });
  if (!parsed.ok) throw new BenchUsageError(`the API refuses this bench's job: ${parsed.issues.map((issue) => issue.message).join('; ')}`);
  const { workflow, input, imageCount } = parsed.value;
  return { id: `bench-${i}`, userId: 'bench', workflow, input, imageCount, createdAt: new Date().toISOString() };
}
async function runJobs(list: JobMessage[]): Promise<void> {
  const done = new Promise<void>((resolve) => {
    onExecuted = () => list.every((j) => executed.has(j.id)) && resolve();
  });
  for (const j of list) await queue.js.publish(subjects.job(catalogue[j.workflow as 'generate_qr_art_v5'].subjectToken), JSON.stringify(j), { msgID: j.id });
  await done;
}

// One warm-up job (not counted): JIT, tile caches, ORT arenas at this size.
await runJobs([job(-1)]);
await flush();
const list = Array.from({ length: jobs }, (_, i) => job(i + 1));
await runJobs(list);
const runs = await flush();
const rss = process.memoryUsage().rss;
sub.unsubscribe();
await daemon.stop();
await finishing.close();
await client.close();
await queue.close();
await nats.stop();
channel.close();
await rm(temp, { recursive: true, force: true });

// ---------------------------------------------------------------------------------------------
// Figures

const records = list.map((j) => ({ id: j.id, ...times.get(j.id)!, executed: executed.get(j.id)! }));
const spans = records.map((r) => r.detail!.threadSpan!).sort((a, b) => a.start - b.start);
const first = spans[0]!.start;
const lastEnd = spans.at(-1)!.end;
const busy = spans.reduce((s, x) => s + (x.end - x.start), 0);
const idleShare = 1 - busy / (lastEnd - first);
const lastExecuted = Math.max(...records.map((r) => r.executed));
const wall = lastExecuted - Math.min(...records.map((r) => r.started!));
const inWindow = runs.filter((r) => r.start >= first - 1 && r.end <= lastEnd + 1);
const modelMs = inWindow.reduce((s, r) => s + (r.end - r.start), 0);
const ratio = wall / modelMs;
const images = jobs * batch;
const imagesPerMinute = (images / wall) * 60_000;
const bytes = inWindow.reduce((s, r) => s + r.bytes, 0);
const perStep = bytes / (jobs * steps);
const byGraph = new Map<string, { ms: number; bytes: number; calls: number }>();
for (const r of inWindow) {
  const g = byGraph.get(r.graph) ?? { ms: 0, bytes: 0, calls: 0 };
  g.ms += r.end - r.start;
  g.bytes += r.bytes;
  g.calls += 1;
  byGraph.set(r.graph, g);
}
const med = (xs: readonly number[]) => summarize(xs).medianMs;
const p95 = (xs: readonly number[]) => summarize(xs).p95Ms;
const latency = records.map((r) => r.ran! - r.started!);
const tail = records.map((r) => r.executed - r.deviceDone!);
const stage = (key: string) => records.map((r) => r.detail!.timings[key] ?? 0);
const mb = (b: number) => (b / 1e6).toFixed(2);
const threadOverhead = records.map((r) => {
  const span = r.detail!.threadSpan!;
  return span.end - span.start - inWindow.filter((x) => x.start >= span.start && x.end <= span.end).reduce((s, x) => s + (x.end - x.start), 0);
});

console.log(
  `\nWorker: ${jobs} v5 jobs queued at once, 1:1 SD (768x768), batch ${batch}, ${steps} steps, qrRepair ${values['qr-repair'] ?? 'on_failure (default)'}, ` +
    `${values.separate ? 'SEPARATE ControlNet + UNet' : 'FUSED denoiser'}${values.heavy ? `, HEAVY UNet (${values.convs}×conv3x3 C=320)` : ', demo graphs'}, ` +
    `${values.provider}, ${threads} ONNX thread(s), prefetch ${prefetch}, ${finishing.threads} finishing thread(s), Node ${process.version}`,
);
console.table(
  [...byGraph].map(([graph, g]) => ({ graph, 'calls/job': (g.calls / jobs).toFixed(1), 'ms/call': (g.ms / g.calls).toFixed(2), 'MB/call': mb(g.bytes / g.calls), 'MB/step': mb(g.bytes / (jobs * steps)) })),
);
console.table([
  { figure: 'job latency (device start → images ready), ms', median: med(latency).toFixed(1), p95: p95(latency).toFixed(1) },
  { figure: 'CPU tail after the device (finish, upload, event), ms', median: med(tail).toFixed(1), p95: p95(tail).toFixed(1) },
  { figure: 'inference thread per job outside session.run, ms', median: med(threadOverhead).toFixed(1), p95: p95(threadOverhead).toFixed(1) },
  ...['scheduler', 'vae_decode', 'nsfw', 'control_planes'].map((k) => ({ figure: `  thread stage ${k} (session.run included), ms`, median: med(stage(k)).toFixed(1), p95: p95(stage(k)).toFixed(1) })),
  { figure: 'scan + repair per job (finishing pool), ms', median: med(stage('scan')).toFixed(1), p95: p95(stage('scan')).toFixed(1) },
  { figure: 'PNG per job (finishing pool), ms', median: med(stage('png')).toFixed(1), p95: p95(stage('png')).toFixed(1) },
]);
const isolated = records.map((r) => r.detail!.outcome).flatMap((o) => (o.kind === 'images' ? o.images : []));
console.log(
  `wall ${(wall / 1000).toFixed(2)} s for ${images} images: ${imagesPerMinute.toFixed(1)} images/min; session.run ${(modelMs / 1000).toFixed(2)} s; ` +
    `boundary ${mb(bytes)} MB = ${mb(perStep)} MB per denoising step; scannable ${isolated.filter((i) => i.isScannable).length}/${isolated.length}; RSS ${(rss / 2 ** 20).toFixed(0)} MB`,
);
const verdicts = [
  `boundary ${mb(perStep)} MB/step${batch === 1 ? ` (<= 10 at batch 1): ${perStep <= 10e6 ? 'MET' : 'MISSED'}` : ''}`,
  `overhead ratio ${ratio.toFixed(3)}${values.heavy ? ` (<= 1.02 heavy, repair on): ${ratio <= 1.02 ? 'MET' : 'MISSED'}` : ' (target applies to --heavy)'}`,
  `inference thread idle ${(idleShare * 100).toFixed(2)}% of ${((lastEnd - first) / 1000).toFixed(2)} s (< 2%): ${idleShare < 0.02 ? 'MET' : 'MISSED'}`,
];
console.log(`targets: ${verdicts.join('; ')}`);
