/**
 * Workers scaled by queue depth: M jobs queued at once in JetStream (a local nats-server), drained
 * by worker replicas that a simulated KEDA starts and stops on the real consumer lag, read from the
 * server's monitoring port as KEDA's nats-jetstream scaler reads it (scripts/keda) — against one
 * fixed worker.
 *
 *   npm run bench -- scale [--jobs 200] [--device-ms 250] [--lag-threshold 4,40] [--activation 0] [--max 10]
 *                          [--poll-ms 1000] [--cooldown-s 5] [--stabilization-s 5] [--pod-start-ms 1000]
 *                          [--prefetch 1] [--concurrency 4] [--skip-fixed]
 *
 * What it measures is the control loop, not a GPU: every replica runs in this process (its own NATS
 * connection and the real worker daemon with the model-free control-image pipeline, without the scan
 * verdict: its CPU, on this one main thread for every replica, would be the bottleneck), and its
 * device is a fixed --device-ms per job, one job at a time. KEDA's polling interval and the HPA's sync
 * period are both --poll-ms (30 s and 15 s in a cluster), cooldown and stabilization are seconds
 * instead of 300 s each, so that a run takes a couple of minutes on two cores.
 *
 * The HPA runs without a behavior (KEDA's default: at most max(2 x current, 4) per sync); the jobs
 * are published half a polling interval after KEDA's first poll. --skip-fixed leaves out the
 * single-worker run.
 *
 * Figures per run: drain time (first job published to the last `executed` event), time to the first
 * scale-up (KEDA's activation, 0 -> 1) and to the first HPA scale-out, peak replicas, replica-seconds
 * spent until drained (starting and stopping replicas included) and how many of them a running
 * replica held no job, time from drained back to zero, and jobs lost or run twice (counted per job id
 * on the runner; both must be 0), plus `executed` events published, jobs handed back by a stopping
 * replica (runs begun on the runner and not completed) and what is left in the stream.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { connectQueue } from '../../src/queue/connection.ts';
import type { JobMessage } from '../../src/messages/schemas.ts';
import { CONSUMERS, STREAMS, subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { startLocalNats } from '../../src/runtime/local-nats.ts';
import { ControlImageRunner } from '../../src/worker/control-image-runner.ts';
import { catalogue } from '../../src/workflows/catalogue.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { InProcessFleet } from '../keda/in-process-fleet.ts';
import { Autoscaler, JetStreamLagReader, runAutoscaler, WORKERS_TRIGGER, type TickResult } from '../keda/simulate.ts';
import { ExecutionLedger, SimulatedDeviceRunner } from '../keda/simulated-device-runner.ts';
import { BenchUsageError, wholeNumber } from './usage-error.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '200' },
    'device-ms': { type: 'string', default: '250' },
    'lag-threshold': { type: 'string', default: '4,40' },
    activation: { type: 'string', default: '0' },
    max: { type: 'string', default: '10' },
    'poll-ms': { type: 'string', default: '1000' },
    'cooldown-s': { type: 'string', default: '5' },
    'stabilization-s': { type: 'string', default: '5' },
    'pod-start-ms': { type: 'string', default: '1000' },
    prefetch: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '4' },
    'skip-fixed': { type: 'boolean', default: false },
  },
  allowPositionals: true,
});
const jobs = wholeNumber('jobs', values.jobs, 1);
const deviceMs = Number(values['device-ms']);
const lagThresholds = values['lag-threshold'].split(',').map(Number);
const activation = Number(values.activation);
const maxReplicas = wholeNumber('max', values.max, 1);
const pollMs = Number(values['poll-ms']);
const cooldownMs = Number(values['cooldown-s']) * 1000;
const stabilizationMs = Number(values['stabilization-s']) * 1000;
const podStartMs = Number(values['pod-start-ms']);
const prefetch = wholeNumber('prefetch', values.prefetch, 0);
const concurrency = wholeNumber('concurrency', values.concurrency, 1);
// Comparisons with NaN (a flag that is not a number) are false, so each is refused here, not left to hang a wait.
if (
  !(jobs >= 1 && deviceMs >= 0 && lagThresholds.every((t) => t > 0) && activation >= 0 && maxReplicas >= 1 && pollMs >= 100 && prefetch >= 0 && concurrency >= 1) ||
  !(cooldownMs >= 0 && stabilizationMs >= 0 && podStartMs >= 0)
) {
  throw new BenchUsageError(
    'need --jobs >= 1, --device-ms >= 0, --lag-threshold > 0 (comma list), --activation >= 0, --max >= 1, --poll-ms >= 100, --cooldown-s, --stabilization-s and --pod-start-ms >= 0, --prefetch >= 0, --concurrency >= 1',
  );
}
const ACK_WAIT_MS = 60_000;
const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));

function jobMessage(i: number): JobMessage {
  const parsed = parseCreateBody({ workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: `https://example.com/qr-art/scale/${i}` }, { allowPrivateUrls: false });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const { workflow, input, imageCount } = parsed.value;
  return { id: `scale-${i}`, userId: 'bench', workflow, input, imageCount, createdAt: new Date().toISOString() };
}

interface RunFigures {
  run: string;
  /** When the first job was published (ms since the epoch). */
  t0: number;
  drainS: number;
  firstScaleUpS?: number;
  firstScaleOutS?: number;
  peakReplicas: number;
  replicaSecondsToDrain: number;
  idleReplicaSecondsToDrain: number;
  backToZeroS?: number;
  lost: number;
  ranTwice: number;
  executedEvents: number;
  /** Runs begun and not completed: jobs handed back by a stopping replica. */
  handedBack: number;
  leftInStream: number;
  timeline: readonly TickResult[];
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One run on a fresh nats-server: a fixed fleet of one, or the fleet the simulated KEDA sizes. */
async function run(mode: { kind: 'fixed' } | { kind: 'autoscaled'; lagThreshold: number }): Promise<RunFigures> {
  const temp = await mkdtemp(join(tmpdir(), 'qr-art-bench-scale-'));
  const nats = await startLocalNats(join(temp, 'nats'));
  const queue = await connectQueue(nats.url, 'qr-art-bench-scale');
  const maxDeliver = 3;
  await ensureTopology(queue.jsm, { jobAckWaitMs: ACK_WAIT_MS, jobMaxDeliver: maxDeliver });
  const ledger = new ExecutionLedger();
  const fleet = new InProcessFleet({
    natsUrl: nats.url,
    logger,
    newRunner: () => ledger.wrap(new SimulatedDeviceRunner(new ControlImageRunner({ policy: { allowPrivate: false }, scanVerdict: false }), deviceMs)),
    prefetch,
    concurrency,
    ackWaitMs: ACK_WAIT_MS,
    maxDeliver,
    podStartMs,
  });

  // Every `executed` publish, duplicates included (the stream would drop a duplicate by Nats-Msg-Id).
  const executedAt = new Map<string, number>();
  let executedEvents = 0;
  let drainedAt = 0;
  let replicaSecondsToDrain = 0;
  let idleReplicaSecondsToDrain = 0;
  const sub = queue.nc.subscribe(subjects.eventsAll, {
    callback: (_error, msg) => {
      const event = msg.json<{ predictionId: string; status: string }>();
      if (event.status !== 'executed') return;
      executedEvents++;
      executedAt.set(event.predictionId, Date.now());
      if (executedAt.size === jobs && !drainedAt) {
        drainedAt = Date.now();
        replicaSecondsToDrain = fleet.podSeconds();
        idleReplicaSecondsToDrain = fleet.idleSeconds();
      }
    },
  });

  let label: string;
  let loop: ReturnType<typeof runAutoscaler> | undefined;
  let autoscaler: Autoscaler | undefined;
  if (mode.kind === 'fixed') {
    label = 'fixed: 1 worker';
    fleet.scaleTo(1);
    await until(() => fleet.running === 1, 10_000 + podStartMs, 'the worker');
  } else {
    label = `KEDA lagThreshold ${mode.lagThreshold}`;
    const reader = new JetStreamLagReader(nats.monitorUrl, WORKERS_TRIGGER);
    autoscaler = new Autoscaler({
      scaledObject: { lagThreshold: mode.lagThreshold, activationLagThreshold: activation, minReplicaCount: 0, maxReplicaCount: maxReplicas, pollingIntervalMs: pollMs, cooldownPeriodMs: cooldownMs },
      hpa: { syncPeriodMs: pollMs, downscaleStabilizationMs: stabilizationMs },
      createdAtMs: Date.now(),
    });
    loop = runAutoscaler({
      autoscaler,
      readLag: async () => (await reader.read()).lag,
      scaleTo: (replicas) => fleet.scaleTo(replicas),
      onError: (error) => logger.warn({ err: error }, 'lag read failed'),
    });
  }

  if (loop) {
    // The jobs arrive half a polling interval after KEDA's first (empty) poll: the average phase.
    await until(() => loop.ticks.length > 0, 10_000, "KEDA's first poll");
    await new Promise((resolve) => setTimeout(resolve, pollMs / 2));
  }
  const t0 = Date.now();
  const list = Array.from({ length: jobs }, (_, i) => jobMessage(i));
  for (const job of list) await queue.js.publish(subjects.job(catalogue.generate_qr_art_v4s.subjectToken), JSON.stringify(job), { msgID: job.id });
  await until(() => drainedAt > 0, 10 * 60_000, `${jobs} executed events`);

  let backToZeroS: number | undefined;
  if (autoscaler) {
    await until(() => autoscaler.replicas === 0 && fleet.replicas === 0, cooldownMs + stabilizationMs + 60_000, 'the scale-down to zero');
    backToZeroS = seconds(Date.now() - drainedAt);
    await loop!.stop();
  }
  await fleet.stopAll();
  const consumer = await queue.jsm.consumers.info(STREAMS.jobs, CONSUMERS.workers);
  const stream = await queue.jsm.streams.info(STREAMS.jobs);
  sub.unsubscribe();
  await queue.close();
  await nats.stop();
  await rm(temp, { recursive: true, force: true });

  const timeline = loop?.ticks ?? [];
  const changes = timeline.flatMap((tick) => tick.changes);
  const firstUp = changes.find((c) => c.from === 0 && c.to > 0);
  const firstOut = changes.find((c) => c.by === 'hpa' && c.to > c.from);
  const audit = ledger.audit(list.map((job) => job.id));
  return {
    run: label,
    t0,
    drainS: seconds(drainedAt - t0),
    ...(firstUp ? { firstScaleUpS: seconds(firstUp.atMs - t0) } : {}),
    ...(firstOut ? { firstScaleOutS: seconds(firstOut.atMs - t0) } : {}),
    peakReplicas: mode.kind === 'fixed' ? 1 : Math.max(0, ...timeline.map((tick) => tick.replicas)),
    replicaSecondsToDrain: Math.round(replicaSecondsToDrain),
    idleReplicaSecondsToDrain: Math.round(idleReplicaSecondsToDrain),
    ...(backToZeroS !== undefined ? { backToZeroS } : {}),
    lost: audit.lost,
    ranTwice: audit.ranTwice,
    executedEvents,
    // Runs begun and not completed: jobs a stopping replica handed back before its device took
    // them (the consumer's num_redelivered counts only unacked messages, 0 once drained).
    handedBack: audit.runsStarted - audit.runsCompleted,
    leftInStream: stream.state.messages + consumer.num_pending + consumer.num_ack_pending,
    timeline,
  };
}

const results: RunFigures[] = [];
if (!values['skip-fixed']) results.push(await run({ kind: 'fixed' }));
for (const lagThreshold of lagThresholds) results.push(await run({ kind: 'autoscaled', lagThreshold }));

console.log(
  `\nScale: ${jobs} jobs queued at once; device ${deviceMs} ms per job (one at a time per replica) + control-image CPU work; ` +
    `WORKER_PREFETCH ${prefetch}, WORKER_CONCURRENCY ${concurrency}; pod start ${podStartMs} ms; ` +
    `KEDA: activationLagThreshold ${activation}, minReplicaCount 0, maxReplicaCount ${maxReplicas}, pollingInterval = HPA sync ${pollMs} ms, ` +
    `cooldownPeriod ${cooldownMs / 1000} s, stabilization window ${stabilizationMs / 1000} s; Node ${process.version}`,
);
for (const result of results.filter((r) => r.timeline.length > 0)) {
  const changes = result.timeline.filter((tick) => tick.changes.length > 0);
  console.log(`${result.run}, replicas (seconds from the first job published: lag read -> replicas): ` + changes.map((tick) => `${seconds(tick.atMs - result.t0)}s ${tick.lag} -> ${tick.replicas}`).join(', '));
}
console.table(
  results.map((r) => ({
    run: r.run,
    'drain s': r.drainS,
    'first scale-up s': r.firstScaleUpS ?? '-',
    'first HPA scale-out s': r.firstScaleOutS ?? '-',
    'peak replicas': r.peakReplicas,
    'replica·s to drain': r.replicaSecondsToDrain,
    'idle replica·s': r.idleReplicaSecondsToDrain,
    'drained -> 0 s': r.backToZeroS ?? '-',
    lost: r.lost,
    'run twice': r.ranTwice,
    'executed events': r.executedEvents,
    'handed back': r.handedBack,
    'left in stream': r.leftInStream,
  })),
);
const failures = results.filter((r) => r.lost > 0 || r.ranTwice > 0 || r.leftInStream > 0);
console.log(failures.length === 0 ? 'no job lost, none run twice, stream empty after every run' : `FAILED: ${failures.map((r) => r.run).join(', ')}`);
if (failures.length > 0) process.exitCode = 1;
