import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { JsMsg } from '@nats-io/jetstream';
import type { Queue } from '../queue/connection.ts';
import { JobMessage, NSFW_ERROR, type StatusEventInput } from '../messages/schemas.ts';
import { isBrokerFailure } from '../queue/broker-errors.ts';
import { CONSUMERS, STREAMS, subjects } from '../queue/subjects.ts';
import type { WorkerMetrics } from './metrics.ts';
import { progressPublisher } from './progress-publisher.ts';
import { DeviceFaultError, JobInputError, type JobRunner, type RenderedImage, type RunOutcome } from './runner.ts';

export interface WorkerDaemonOptions {
  queue: Queue;
  runner: JobRunner;
  logger: Logger;
  /** Jobs held ready behind the one the device runs (WORKER_PREFETCH). */
  prefetch: number;
  /** Jobs in hand at most: on the device, waiting for it, and being finished (WORKER_CONCURRENCY). */
  maxInHand: number;
  workerId?: string;
  /** Heartbeat interval; must be well inside the consumer's AckWait. */
  heartbeatMs: number;
  /** The device failed: every job that still needed it has been handed back; the process should exit. */
  onFatal?: (error: Error) => void;
  /**
   * After a device fault, how long a job already past the device (its images being finished on the
   * CPU and uploaded) may take to be delivered before it is handed back too. Keep it inside the
   * time the exiting process gives its stop (JOB_ABORT_GRACE_MS).
   */
  finishAfterFaultMs?: number;
  /** Where jobs, their waits, durations, uploads and images are recorded. */
  metrics?: WorkerMetrics;
  /** The consumer's MaxDeliver (JOB_MAX_DELIVER): a job whose input was away for now is handed back before its last attempt. */
  maxDeliver: number;
  /**
   * False while the device cannot start a job (the inference thread being replaced after a hung
   * or crashed run): no job is pulled meanwhile, so the next waits in the stream for a worker
   * that can run it. Polled; true when not given.
   */
  deviceAccepting?: () => boolean;
  /**
   * PREDICTION_EXPIRY_HOURS, in ms: a job created longer ago than this is dropped unrun. The API
   * fails and refunds such a prediction (expired) and discards a late result, so running it
   * would only spend the device (a backlog left by a long worker outage) ahead of paid jobs.
   */
  expiresAfterMs?: number;
}

export interface WorkerDaemon {
  readonly workerId: string;
  /** True while pulling; false after stop() or a fatal fault. */
  ready(): boolean;
  /** Jobs in hand now. */
  inHand(): number;
  /**
   * Stops pulling, hands back every job on or waiting for the device, reports the fault (the device
   * is gone). Jobs past the device are finished and delivered, within finishAfterFaultMs.
   */
  fatal(error: Error): Promise<void>;
  /** Stops pulling, lets jobs in hand finish, then resolves. */
  stop(): Promise<void>;
  /**
   * The process is about to die (a second Ctrl-C): stops pulling and hands back every job in
   * hand, so the queue delivers them again in seconds rather than after their ack wait.
   * Resolves with how many were handed back once the server has them, or rejects when it cannot
   * be reached; their runs are not awaited.
   */
  handBackAll(): Promise<number>;
}

const TRANSIENT_RETRY_MS = 5000;
/** How often a job waiting to be handed back looks whether NATS is back. */
const RECONNECT_POLL_MS = 250;
/** Deliveries tried while connected before a made result's job is handed back (0.5 + 1 + 2 + 4 s apart). */
const DELIVERY_TRIES_CONNECTED = 5;
/** How long one pull waits for a job. */
const PULL_EXPIRES_MS = 2000;
/** How often a worker whose device cannot start a job looks again. */
const DEVICE_POLL_MS = 100;

/**
 * Where a job goes: pulled from the shared durable consumer, held (heartbeating) until the device
 * takes it, announced (executing) when it does, run, its images put in the object store, the
 * result announced (executed | failed), and only then acked. A crash before the ack means
 * redelivery; the API applies events idempotently, so a rerun is invisible to the client.
 *
 * Pulling keeps the device busy: the next job is pulled while the current one still generates
 * (WORKER_PREFETCH jobs ahead), and a job whose images are being finished on the CPU no longer
 * counts against the device, so its scan check, repair, PNGs and uploads overlap the next
 * generation. WORKER_CONCURRENCY bounds the jobs in hand altogether.
 */
export function startWorkerDaemon(options: WorkerDaemonOptions): WorkerDaemon {
  const { queue, runner, metrics } = options;
  const workerId = options.workerId ?? `${hostname()}-${process.pid}`;
  const logger = options.logger.child({ component: 'worker', workerId, runner: runner.name });
  const deviceSlots = 1 + options.prefetch;
  const finishAfterFaultMs = options.finishAfterFaultMs ?? 10_000;
  let pulling = true;
  let fatalError: Error | undefined;
  /** Messages in hand: whether each still needs the device, its run, and how fatal() stops that run. */
  const held = new Map<JsMsg, { device: boolean; job: Promise<void>; abort: AbortController }>();
  /** Messages nak'ed by fatal(): their run's failure is that hand-back, not a fault of their own. */
  const handedBack = new Set<JsMsg>();
  let wake: (() => void) | undefined;
  const changed = (): void => {
    wake?.();
    wake = undefined;
  };

  const publishEvent = async (event: StatusEventInput) => {
    await queue.js.publish(subjects.event(event.predictionId), JSON.stringify(event), {
      msgID: `${event.predictionId}.${event.status}`,
    });
  };

  /**
   * Hands a job back for another attempt. A nak sent while NATS is away is lost, and the job would
   * wait out its whole AckWait: it waits for the connection (keeping the job alive meanwhile)
   * while the daemon still pulls (a stop or a fault hands it back its own way).
   */
  async function handBackWhenConnected(msg: JsMsg): Promise<void> {
    while (!queue.connected() && pulling && !handedBack.has(msg)) {
      msg.working();
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_POLL_MS));
    }
    msg.nak(TRANSIENT_RETRY_MS);
  }

  /**
   * Delivers a made result, again while NATS is away: handing the job back would make its images
   * a second time, and on its last delivery fail a prediction whose images exist. Connected, a
   * broker failure (JetStream answering 503: a store full, a leader moving) is tried a few more
   * times and then thrown, so the job is handed back, bounded by MaxDeliver, rather than held.
   * Also thrown when the worker stops or a fault hands the job back.
   */
  async function deliverOnceConnected(msg: JsMsg, log: Logger, deliver: () => Promise<void>): Promise<void> {
    let connectedFailures = 0;
    for (;;) {
      try {
        return await deliver();
      } catch (error) {
        const away = !queue.connected();
        if (!away) connectedFailures++;
        if (!isBrokerFailure(error) && !away) throw error;
        if (connectedFailures >= DELIVERY_TRIES_CONNECTED || !pulling || handedBack.has(msg)) throw error;
        if (away) log.warn({ err: error }, 'result not delivered (NATS away); delivering it once NATS is back');
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_POLL_MS * 2 ** connectedFailures));
        while (!queue.connected() && pulling && !handedBack.has(msg)) await new Promise((resolve) => setTimeout(resolve, RECONNECT_POLL_MS));
      }
    }
  }

  async function handleJob(msg: JsMsg, signal: AbortSignal): Promise<void> {
    let job: JobMessage;
    try {
      job = JobMessage.parse(JSON.parse(new TextDecoder().decode(msg.data)));
    } catch (error) {
      logger.error({ err: error, subject: msg.subject }, 'malformed job dropped');
      msg.term();
      return;
    }
    const log = logger.child({ predictionId: job.id, workflow: job.workflow, delivery: msg.info.deliveryCount });
    log.debug('job received');
    const age = Date.now() - Date.parse(job.createdAt);
    if (options.expiresAfterMs !== undefined && age > options.expiresAfterMs) {
      log.warn({ ageHours: Math.round(age / 360_000) / 10 }, 'job older than PREDICTION_EXPIRY_HOURS dropped unrun: its prediction is expired and refunded');
      msg.ack();
      return;
    }
    const heartbeat = setInterval(() => msg.working(), options.heartbeatMs);
    const started = Date.now();
    let executing: Promise<void> | undefined;
    // Kept for the terminal event too (schemas.ts: events may be applied out of order).
    let startedAt: string | undefined;
    const markStarted = (): string => {
      if (startedAt === undefined) metrics?.jobStarted(job.workflow, job.createdAt);
      return (startedAt ??= new Date().toISOString());
    };
    const announce = (): Promise<void> => (executing ??= publishEvent({ predictionId: job.id, status: 'executing', at: markStarted(), workerId }));
    /** The result is published: counted, with the time since the device started it. */
    const finished = (outcome: 'executed' | 'failed' | 'nsfw'): void =>
      metrics?.jobFinished(job.workflow, outcome, startedAt === undefined ? undefined : (Date.now() - Date.parse(startedAt)) / 1000);
    const releaseDevice = (): void => {
      const h = held.get(msg);
      if (h?.device) (h.device = false), changed();
    };
    try {
      let outcome: RunOutcome;
      try {
        outcome = await runner.run(job, {
          signal,
          onStart: () => void announce().catch((err) => log.warn({ err }, 'executing event not published; it is sent again with the result')),
          onDeviceDone: releaseDevice,
          onProgress: progressPublisher(queue.nc, job.id),
        });
      } finally {
        releaseDevice();
      }
      const announced = (): Promise<void> => announce().catch(() => ((executing = undefined), announce()));
      if (outcome.kind === 'nsfw') {
        const at = new Date().toISOString();
        await deliverOnceConnected(msg, log, async () => {
          await announced();
          await publishEvent({ predictionId: job.id, status: 'failed', at, startedAt, workerId, error: NSFW_ERROR, nsfw: true });
        });
        finished('nsfw');
      } else {
        // Uploads in parallel: the object store takes each image in chunks of its own. The names
        // are drawn once, so a delivery tried again overwrites what a broken one left.
        const u0 = performance.now();
        const names = outcome.images.map((image) => `${randomBytes(16).toString('base64url')}.${image.extension}`);
        await deliverOnceConnected(msg, log, async () => {
          await announced();
          await Promise.all(outcome.images.map((image, i) => queue.images.putBlob({ name: names[i]! }, image.data)));
        });
        metrics?.stage('upload', (performance.now() - u0) / 1000);
        const executed: StatusEventInput = {
          predictionId: job.id,
          status: 'executed',
          at: new Date().toISOString(),
          startedAt,
          workerId,
          images: names,
          isScanables: outcome.images.flatMap((image) => (image.isScannable === undefined ? [] : [image.isScannable])),
          ...scanRobustnessOf(outcome.images),
          ...(outcome.caption !== undefined ? { caption: outcome.caption } : {}),
        };
        await deliverOnceConnected(msg, log, () => publishEvent(executed));
        finished('executed');
        metrics?.imagesDelivered(job.workflow, outcome.images.map((image) => image.isScannable));
      }
      msg.ack();
      log.info({ ms: Date.now() - started, outcome: outcome.kind }, 'job done');
    } catch (error) {
      if (handedBack.has(msg)) {
        metrics?.jobFinished(job.workflow, 'handed_back'); // by fatal()
        return;
      }
      if (error instanceof JobInputError && error.transient && msg.info.deliveryCount < options.maxDeliver) {
        metrics?.jobFinished(job.workflow, 'handed_back');
        log.warn({ err: error }, 'job input not available for now; handing it back');
        await handBackWhenConnected(msg);
      } else if (error instanceof JobInputError) {
        try {
          // A job refused before the device started it (an unreadable qrImage) never executed: queued, then failed.
          if (startedAt !== undefined) await announce().catch(() => ((executing = undefined), announce()));
          await publishEvent({ predictionId: job.id, status: 'failed', at: new Date().toISOString(), startedAt, workerId, error: { code: error.code, message: error.message } });
        } catch (publishError) {
          // NATS is away: the failure cannot be told now. Hand the job back like any transient
          // failure; its next run fails the same way and tells it.
          metrics?.jobFinished(job.workflow, 'handed_back');
          log.error({ err: publishError, jobError: error }, 'job failed on its input, but the failure was not published; handing it back');
          await handBackWhenConnected(msg);
          return;
        }
        finished('failed');
        msg.ack();
        log.warn({ err: error }, 'job failed on its input');
      } else if (error instanceof DeviceFaultError) {
        log.fatal({ err: error }, 'device fault during a job; handing back the jobs that need the device and giving the device up');
        metrics?.jobFinished(job.workflow, 'handed_back');
        // Its device work ended in the fault, so fatal() no longer counts it as on the device.
        handBack([msg]);
        await fatal(error);
      } else {
        metrics?.jobFinished(job.workflow, 'handed_back');
        // Transient (NATS hiccup, a thread crash, a deadline): hand it back; MaxDeliver bounds the retries.
        log.error({ err: error }, 'job attempt failed; handing it back');
        await handBackWhenConnected(msg);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Waits until the device has room for another job and the hand for another message. */
  async function room(): Promise<void> {
    const deviceBusy = (): number => [...held.values()].filter((h) => h.device).length;
    const accepting = options.deviceAccepting ?? (() => true);
    while (pulling && (deviceBusy() >= deviceSlots || held.size >= options.maxInHand || !accepting())) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        // The device comes back without a job changing: look again shortly.
        if (!accepting()) setTimeout(resolve, DEVICE_POLL_MS);
      });
    }
  }

  const loop = (async () => {
    while (pulling) {
      try {
        const consumer = await queue.js.consumers.get(STREAMS.jobs, CONSUMERS.workers);
        while (pulling) {
          await room();
          if (!pulling) break;
          const msg = await consumer.next({ expires: PULL_EXPIRES_MS });
          if (!msg) continue;
          if (!pulling) {
            msg.nak();
            break;
          }
          const entry = { device: true, job: Promise.resolve(), abort: new AbortController() };
          held.set(msg, entry);
          entry.job = handleJob(msg, entry.abort.signal).finally(() => {
            held.delete(msg);
            handedBack.delete(msg);
            changed();
          });
        }
      } catch (error) {
        if (!pulling) break;
        logger.warn({ err: error }, 'pull interrupted; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  })();
  logger.info({ prefetch: options.prefetch, maxInHand: options.maxInHand }, 'worker pulling jobs');

  /**
   * Hands messages back now rather than after AckWait; just after this worker's last pull has
   * expired, so that pull cannot take one of them again (each delivery counts toward MaxDeliver).
   */
  function handBack(messages: Iterable<JsMsg>): void {
    for (const msg of messages) {
      if (handedBack.has(msg)) continue;
      handedBack.add(msg);
      msg.nak(PULL_EXPIRES_MS + 1000);
    }
  }

  async function fatal(error: Error): Promise<void> {
    if (fatalError) return;
    fatalError = error;
    pulling = false;
    changed();
    // A job past the device has its images; only their scan check, PNGs and upload are left, on
    // the CPU. Handing it back would run it on another device again and drop that run's result as
    // a duplicate, so it is delivered, unless it takes longer than the exiting process can wait.
    const finishing = [...held].filter(([msg, h]) => !h.device && !handedBack.has(msg));
    const onDevice = [...held].filter(([, h]) => h.device);
    handBack(onDevice.map(([msg]) => msg));
    for (const [, h] of onDevice) h.abort.abort(error);
    if (finishing.length > 0) {
      logger.warn({ jobs: finishing.length }, 'jobs past the device are finished and delivered before exiting');
      const late = setTimeout(() => {
        const left = finishing.map(([msg]) => msg).filter((msg) => held.has(msg));
        if (left.length === 0) return;
        logger.warn({ jobs: left.length, ms: finishAfterFaultMs }, 'jobs past the device were not delivered in time; handing them back');
        handBack(left);
        void queue.nc.flush().catch(() => undefined);
      }, finishAfterFaultMs);
      late.unref();
      void Promise.all(finishing.map(([, h]) => h.job)).then(() => clearTimeout(late));
    }
    await queue.nc.flush().catch(() => undefined);
    options.onFatal?.(error);
  }

  return {
    workerId,
    // Connected now, not merely not closed: the connection reconnects forever, so it never closes while running.
    ready: () => pulling && !fatalError && queue.connected(),
    inHand: () => held.size,
    fatal,
    async stop() {
      pulling = false;
      changed();
      // A pull waits out its expiry, but one made on a connection that went silent waits until
      // NATS is back: the jobs in hand, not the pull, are what a stop must wait for. A message
      // that reaches the abandoned pull later is handed back (the loop sees pulling false), or
      // delivered again after its ack wait if the process has gone.
      await Promise.race([loop, new Promise((resolve) => setTimeout(resolve, 2 * PULL_EXPIRES_MS).unref())]);
      await Promise.all([...held.values()].map((h) => h.job));
    },
    async handBackAll() {
      pulling = false;
      changed();
      const messages = [...held.keys()].filter((msg) => !handedBack.has(msg));
      handBack(messages);
      await queue.nc.flush();
      return messages.length;
    },
  };
}

/** The executed event's scanRobustness: present only when every image has a figure (a QR job). */
function scanRobustnessOf(images: readonly RenderedImage[]): { scanRobustness?: number[] } {
  const figures = images.flatMap((image) => (image.scanRobustness === undefined ? [] : [image.scanRobustness]));
  return figures.length > 0 && figures.length === images.length ? { scanRobustness: figures } : {};
}
