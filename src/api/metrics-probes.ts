/**
 * The API's gauges that need I/O, read when Prometheus scrapes (prom-client `collect()`) rather
 * than on a timer: the outbox, the job queue as KEDA sees it, webhook deliveries not yet settled,
 * and the database pool.
 *
 * A scrape must answer even while the database or NATS is away, and quickly: each probe has
 * PROBE_TIMEOUT_MS, a probe that fails or runs out of time leaves its series out of that scrape
 * (absent, not a made-up 0: "no jobs waiting" and "cannot tell" are different answers to an
 * alert), and the error is logged at debug. Gauges fed by one probe (outbox count and age, the
 * consumer's two counts) share one read per scrape.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Queue } from '../queue/connection.ts';
import { CONSUMERS, STREAMS } from '../queue/subjects.ts';
import type { Database } from '../store/database.ts';

/** Well inside Prometheus' default scrape timeout (10 s), and the whole scrape waits for the slowest probe. */
export const PROBE_TIMEOUT_MS = 1000;

export interface ProbeDependencies {
  readonly registry: Registry;
  readonly db: Database;
  readonly queue: Queue;
  readonly logger: Logger;
  readonly timeoutMs?: number;
}

/** Registers the scrape-time gauges on `registry`. */
export function registerScrapeProbes(deps: ProbeDependencies): void {
  const { registry, db, queue } = deps;
  const timeoutMs = deps.timeoutMs ?? PROBE_TIMEOUT_MS;
  const logger = deps.logger.child({ component: 'metrics' });
  const probe = <T>(name: string, read: () => Promise<T>) => sharedProbe(name, read, timeoutMs, logger);

  // No I/O: node-postgres keeps the counts; PGlite is one connection in this process. Registered
  // first, so read first: the probes below send queries, and node-postgres counts each as
  // waiting until its next tick, even one an idle connection takes.
  new Gauge({
    name: 'qrart_db_pool_connections',
    help: 'Database connections by state (PGlite: its one connection, in use)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const pool = db.connections();
      this.set({ state: 'in_use' }, pool.inUse);
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'waiting' }, pool.waiting);
    },
  });

  const outbox = probe('outbox', async () => {
    const { rows } = await db.query<{ messages: string | number; oldest_age: string | number | null }>(
      `SELECT count(*) AS messages, extract(epoch FROM now() - min(created_at)) AS oldest_age FROM outbox`,
    );
    return { messages: Number(rows[0]?.messages ?? 0), oldestAge: Math.max(0, Number(rows[0]?.oldest_age ?? 0)) };
  });
  gaugeFrom(registry, 'qrart_outbox_messages', 'Rows waiting in the outbox', outbox, (o) => o.messages);
  gaugeFrom(registry, 'qrart_outbox_oldest_age_seconds', 'Age of the oldest outbox row (0 when empty)', outbox, (o) => o.oldestAge);

  const jobs = probe('job queue', () => consumerCounts(queue, STREAMS.jobs, CONSUMERS.workers));
  gaugeFrom(registry, 'qrart_jobs_queue_depth', 'Jobs KEDA counts for the workers consumer: pending + ack-pending', jobs, (c) => c.pending + c.ackPending);
  gaugeFrom(registry, 'qrart_jobs_pending', 'Jobs not yet delivered to a worker', jobs, (c) => c.pending);
  gaugeFrom(registry, 'qrart_jobs_ack_pending', 'Jobs delivered to a worker and not yet acked (held, running, being finished)', jobs, (c) => c.ackPending);

  const webhooks = probe('webhook queue', () => consumerCounts(queue, STREAMS.webhooks, CONSUMERS.webhookDispatcher));
  gaugeFrom(
    registry,
    'qrart_webhook_retries_pending',
    'Webhook deliveries not settled yet: waiting for a retry, for a busy destination, or in flight',
    webhooks,
    (c) => c.pending + c.ackPending,
  );

}

/** A JetStream consumer's backlog: not yet delivered, and delivered but not acked. */
async function consumerCounts(queue: Queue, stream: string, consumer: string): Promise<{ pending: number; ackPending: number }> {
  // While disconnected a request would only wait out the timeout.
  if (!queue.connected()) throw new Error('NATS is not connected');
  const info = await queue.jsm.consumers.info(stream, consumer);
  return { pending: info.num_pending, ackPending: info.num_ack_pending };
}

/** A gauge without labels whose value comes from a probe; absent from a scrape the probe could not answer. */
function gaugeFrom<T>(registry: Registry, name: string, help: string, probe: () => Promise<T | undefined>, value: (snapshot: T) => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const snapshot = await probe();
      if (snapshot === undefined) this.remove();
      else this.set(value(snapshot));
    },
  });
}

/**
 * One read shared by every gauge that asks while it is in flight (the gauges of one scrape are
 * collected together), bounded by `timeoutMs`; undefined when it failed or ran out of time.
 */
function sharedProbe<T>(name: string, read: () => Promise<T>, timeoutMs: number, logger: Logger): () => Promise<T | undefined> {
  let inFlight: Promise<T | undefined> | undefined;
  return () => {
    inFlight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => {
          logger.debug({ probe: name, timeoutMs }, 'metrics probe timed out; its series are left out of this scrape');
          resolve(undefined);
        }, timeoutMs);
      });
      const reading = read().catch((err: unknown) => {
        logger.debug({ probe: name, err }, 'metrics probe failed; its series are left out of this scrape');
        return undefined;
      });
      try {
        return await Promise.race([reading, timeout]);
      } finally {
        clearTimeout(timer);
        inFlight = undefined;
      }
    })();
    return inFlight;
  };
}
