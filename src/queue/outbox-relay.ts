import type { Logger } from 'pino';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Database } from '../store/database.ts';
import { pendingOutbox, removeFromOutbox } from '../store/outbox.ts';

export interface OutboxRelay {
  /** Asks for a flush soon (after a commit that wrote to the outbox). */
  kick(): void;
  /** Flushes now; resolves when every message pending at call time is published or a publish failed. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Publishes outbox rows to JetStream, then deletes them. A crash after the publish and
 * before the delete republishes the row: the stream's duplicate window (Nats-Msg-Id)
 * drops that copy. When NATS is unreachable the rows wait and the periodic sweep retries.
 */
export function startOutboxRelay(options: {
  db: Database;
  js: JetStreamClient;
  logger: Logger;
  sweepIntervalMs?: number;
  batchSize?: number;
}): OutboxRelay {
  const { db, js, logger } = options;
  const batchSize = options.batchSize ?? 200;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  async function drain(): Promise<void> {
    for (;;) {
      const batch = await pendingOutbox(db, batchSize);
      if (batch.length === 0) return;
      const published: number[] = [];
      try {
        // Publish concurrently; each awaits its own PubAck from the stream.
        const results = await Promise.allSettled(
          batch.map((message) =>
            js.publish(message.subject, JSON.stringify(message.payload), { msgID: message.msgId, timeout: 5000 }),
          ),
        );
        results.forEach((result, index) => {
          if (result.status === 'fulfilled') published.push(batch[index]!.id);
          else logger.warn({ err: result.reason, subject: batch[index]!.subject }, 'outbox publish failed; will retry');
        });
      } finally {
        await removeFromOutbox(db, published);
      }
      if (published.length < batch.length) return;
    }
  }

  function flush(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await drain();
        } while (again && !stopped);
      } catch (error) {
        logger.warn({ err: error }, 'outbox relay pass failed; will retry');
      } finally {
        running = null;
      }
    })();
    return running;
  }

  const sweep = setInterval(() => void flush(), options.sweepIntervalMs ?? 2000);
  sweep.unref();

  return {
    kick: () => void flush(),
    flush,
    async stop() {
      stopped = true;
      clearInterval(sweep);
      await running;
    },
  };
}
