import type { Logger } from 'pino';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Database } from '../store/database.ts';
import { pendingOutbox, removeFromOutbox, type PendingOutboxMessage } from '../store/outbox.ts';

export interface OutboxRelay {
  /** Publishes messages just committed to the outbox (no read back), then removes their rows. */
  publish(messages: readonly PendingOutboxMessage[]): void;
  /** Publishes every row left in the outbox (crash leftovers, NATS outages); resolves when done or a publish failed. */
  sweep(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Moves outbox rows to JetStream. The writer hands over what it committed, so the normal
 * path costs one publish per message and one DELETE per batch; a periodic sweep publishes
 * whatever was left behind. A row published twice (sweep racing a slow publish, a crash
 * before the DELETE) is stored once: the stream drops the copy by Nats-Msg-Id.
 */
export function startOutboxRelay(options: {
  db: Database;
  js: JetStreamClient;
  logger: Logger;
  sweepIntervalMs?: number;
  /** Rows younger than this are left to their writer's own publish. */
  sweepAfterMs?: number;
}): OutboxRelay {
  const { db, js, logger } = options;
  const sweepAfterMs = options.sweepAfterMs ?? 3000;
  const inFlight = new Set<Promise<unknown>>();
  let sweeping: Promise<void> | null = null;

  /** Publishes a batch; removes the published rows; returns whether all went through. */
  async function publishBatch(messages: readonly PendingOutboxMessage[]): Promise<boolean> {
    const results = await Promise.allSettled(
      messages.map((message) => js.publish(message.subject, JSON.stringify(message.payload), { msgID: message.msgId, timeout: 5000 })),
    );
    const published = messages.filter((_, index) => results[index]!.status === 'fulfilled').map((message) => message.id);
    if (published.length < messages.length) {
      const failure = results.find((result) => result.status === 'rejected') as PromiseRejectedResult;
      logger.warn({ err: failure.reason, unpublished: messages.length - published.length }, 'outbox publish failed; the sweep will retry');
    }
    await removeFromOutbox(db, published);
    return published.length === messages.length;
  }

  function track(task: Promise<unknown>): void {
    const settled = task.catch((error) => logger.warn({ err: error }, 'outbox relay error; the sweep will retry')).finally(() => inFlight.delete(settled));
    inFlight.add(settled);
  }

  function sweep(): Promise<void> {
    sweeping ??= (async () => {
      try {
        for (;;) {
          const batch = await pendingOutbox(db, 500, sweepAfterMs);
          if (batch.length === 0 || !(await publishBatch(batch))) return;
        }
      } catch (error) {
        logger.warn({ err: error }, 'outbox sweep failed; will retry');
      } finally {
        sweeping = null;
      }
    })();
    return sweeping;
  }

  const timer = setInterval(() => void sweep(), options.sweepIntervalMs ?? 2000);
  timer.unref();

  return {
    publish(messages) {
      if (messages.length > 0) track(publishBatch(messages));
    },
    sweep,
    async stop() {
      clearInterval(timer);
      await sweeping;
      await Promise.all(inFlight);
    },
  };
}
