import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { JsMsg } from '@nats-io/jetstream';
import type { Queue } from '../queue/connection.ts';
import { JobMessage, NSFW_ERROR, type StatusEventInput } from '../queue/schemas.ts';
import { CONSUMERS, STREAMS, subjects } from '../queue/subjects.ts';
import { JobInputError, type JobRunner } from './runner.ts';

export interface WorkerDaemonOptions {
  queue: Queue;
  runner: JobRunner;
  logger: Logger;
  concurrency: number;
  workerId?: string;
  /** Heartbeat interval; must be well inside the consumer's AckWait. */
  heartbeatMs: number;
}

export interface WorkerDaemon {
  readonly workerId: string;
  /** True once pulling; false after stop() began. */
  ready(): boolean;
  /** Stops pulling, lets jobs in hand finish, then resolves. */
  stop(): Promise<void>;
}

const TRANSIENT_RETRY_MS = 5000;

/**
 * Where a job goes: pulled one at a time per slot from the shared durable consumer,
 * announced (executing), run, its images put in the object store, the result announced
 * (executed | failed), and only then acked. A crash before the ack means redelivery;
 * the API applies events idempotently, so a rerun is invisible to the client.
 */
export function startWorkerDaemon(options: WorkerDaemonOptions): WorkerDaemon {
  const { queue, runner } = options;
  const workerId = options.workerId ?? `${hostname()}-${process.pid}`;
  const logger = options.logger.child({ component: 'worker', workerId, runner: runner.name });
  const abort = new AbortController();
  let pulling = true;

  const publishEvent = async (event: StatusEventInput) => {
    await queue.js.publish(subjects.event(event.predictionId), JSON.stringify(event), {
      msgID: `${event.predictionId}.${event.status}`,
    });
  };

  async function handleJob(msg: JsMsg): Promise<void> {
    let job: JobMessage;
    try {
      job = JobMessage.parse(JSON.parse(new TextDecoder().decode(msg.data)));
    } catch (error) {
      logger.error({ err: error, subject: msg.subject }, 'malformed job dropped');
      msg.term();
      return;
    }
    const log = logger.child({ predictionId: job.id, workflow: job.workflow, delivery: msg.info.deliveryCount });
    const heartbeat = setInterval(() => msg.working(), options.heartbeatMs);
    const started = Date.now();
    try {
      await publishEvent({ predictionId: job.id, status: 'executing', at: new Date().toISOString(), workerId });
      const outcome = await runner.run(job, abort.signal);
      if (outcome.kind === 'nsfw') {
        await publishEvent({ predictionId: job.id, status: 'failed', at: new Date().toISOString(), workerId, error: NSFW_ERROR, nsfw: true });
      } else {
        const names: string[] = [];
        for (const image of outcome.images) {
          const name = `${randomBytes(16).toString('base64url')}.${image.extension}`;
          await queue.images.putBlob({ name }, image.data);
          names.push(name);
        }
        await publishEvent({
          predictionId: job.id,
          status: 'executed',
          at: new Date().toISOString(),
          workerId,
          images: names,
          isScanables: outcome.images.flatMap((image) => (image.isScannable === undefined ? [] : [image.isScannable])),
          ...(outcome.caption !== undefined ? { caption: outcome.caption } : {}),
        });
      }
      msg.ack();
      log.info({ ms: Date.now() - started, outcome: outcome.kind }, 'job done');
    } catch (error) {
      if (error instanceof JobInputError) {
        await publishEvent({
          predictionId: job.id,
          status: 'failed',
          at: new Date().toISOString(),
          workerId,
          error: { code: error.code, message: error.message },
        });
        msg.ack();
        log.warn({ err: error }, 'job failed on its input');
      } else {
        // Transient (NATS hiccup, device error): hand it back; MaxDeliver bounds the retries.
        log.error({ err: error }, 'job attempt failed; handing it back');
        msg.nak(TRANSIENT_RETRY_MS);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  const slots = Array.from({ length: options.concurrency }, async () => {
    while (pulling) {
      try {
        const consumer = await queue.js.consumers.get(STREAMS.jobs, CONSUMERS.workers);
        while (pulling) {
          const msg = await consumer.next({ expires: 2000 });
          if (msg) await handleJob(msg);
        }
      } catch (error) {
        if (!pulling) break;
        logger.warn({ err: error }, 'pull interrupted; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  });
  logger.info({ concurrency: options.concurrency }, 'worker pulling jobs');

  return {
    workerId,
    ready: () => pulling && !queue.nc.isClosed(),
    async stop() {
      pulling = false;
      await Promise.all(slots);
      abort.abort();
    },
  };
}
