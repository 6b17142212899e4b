import type { Logger } from 'pino';
import { openImageBucket, type Queue } from './connection.ts';
import { ensureTopology, type TopologyOptions } from './topology.ts';

/** Between tries while JetStream is not serving yet after a reconnect (a leader still being elected). */
const RETRY_MS = 2000;
/** Tries after one reconnect, then the next reconnect tries again. */
const ATTEMPTS = 30;

/**
 * Ensures the topology again after every reconnect. A NATS server that comes back without its
 * store (no persistent volume, a store lost) has no streams: without this every create would be
 * charged and stay queued, its job unpublishable and the workers' pulls failing, until a process
 * restarted. Creating what exists is a no-op (ensureTopology creates or updates).
 */
export function keepTopologyAfterReconnects(queue: Queue, options: TopologyOptions, logger: Logger): void {
  let generation = 0;
  void (async () => {
    for await (const status of queue.nc.status()) {
      if (status.type !== 'reconnect') continue;
      const mine = ++generation;
      void (async () => {
        for (let attempt = 1; attempt <= ATTEMPTS && mine === generation && !queue.nc.isClosed(); attempt++) {
          try {
            // The bucket first: ensureTopology sets its replicas and retention.
            await openImageBucket(queue.js);
            await ensureTopology(queue.jsm, options);
            return;
          } catch (error) {
            if (attempt === ATTEMPTS) logger.warn({ err: error }, 'streams not checked after the NATS reconnect; the next reconnect tries again');
            await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
          }
        }
      })();
    }
  })();
}
