import type { Logger } from 'pino';
import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { DependencyUnavailableError } from '../util/unavailable.ts';

/**
 * While the database (or NATS) is out, every pending message fails and is redelivered about once
 * a second: said once, then at most this often with how many failed since, not once per message.
 */
export const OUTAGE_LOG_EVERY_MS = 30_000;

export interface RunningConsumer {
  /** Stops pulling, waits for the messages in hand to be handled. */
  stop(): Promise<void>;
}

/**
 * Pulls from a durable consumer until stopped, handling up to `concurrency` messages at a
 * time. The handler owns ack/nak/term; a handler that throws gets its message nak'ed with
 * a short delay so nothing is lost. Survives NATS restarts: the pull is re-established.
 */
export function runConsumer(options: {
  js: JetStreamClient;
  stream: string;
  consumer: string;
  logger: Logger;
  concurrency?: number;
  handle: (msg: JsMsg) => Promise<void>;
}): RunningConsumer {
  const { js, stream, consumer, logger, handle } = options;
  const concurrency = options.concurrency ?? 1;
  const inFlight = new Set<Promise<void>>();
  let messages: ConsumerMessages | null = null;
  let stopped = false;

  let outage: { loggedAt: number; failedSince: number } | undefined;
  const handleSafely = async (msg: JsMsg): Promise<void> => {
    try {
      await handle(msg);
      if (outage) logger.info({ stream, consumer, failedSince: outage.failedSince }, 'messages are handled again');
      outage = undefined;
    } catch (error) {
      msg.nak(1000);
      if (!(error instanceof DependencyUnavailableError)) {
        logger.error({ err: error, stream, consumer, subject: msg.subject }, 'message handler failed; redelivering');
        return;
      }
      const now = Date.now();
      outage ??= { loggedAt: Number.NEGATIVE_INFINITY, failedSince: 0 };
      outage.failedSince++;
      if (now - outage.loggedAt < OUTAGE_LOG_EVERY_MS) return;
      logger.warn({ err: error, stream, consumer, failedSince: outage.failedSince }, `the ${error.dependency} is unavailable: messages are redelivered until it is back`);
      outage.loggedAt = now;
      outage.failedSince = 0;
    }
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        const source = await js.consumers.get(stream, consumer);
        if (stopped) break;
        // A consumer gone (NATS back without its store) ends the pull at once, and this loop gets it
        // again once it is made again (topology-keeper.ts); the driver's own recovery waits out missed heartbeats.
        messages = await source.consume({ max_messages: Math.max(concurrency, 1), abort_on_missing_resource: true });
        // stop() may have run while the pull was being set up, with nothing to close yet.
        // Not awaited: close() settles only once the iterator runs, and it will not.
        if (stopped) {
          void messages.close().catch(() => undefined);
          break;
        }
        for await (const msg of messages) {
          const task = handleSafely(msg).finally(() => inFlight.delete(task));
          inFlight.add(task);
          if (inFlight.size >= concurrency) await Promise.race(inFlight);
        }
      } catch (error) {
        if (!stopped) logger.warn({ err: error, stream, consumer }, 'consumer interrupted; resubscribing');
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();

  return {
    async stop() {
      stopped = true;
      await messages?.close().catch(() => undefined);
      await loop;
      await Promise.all(inFlight);
    },
  };
}
