import type { Logger } from 'pino';
import type { Queue } from '../queue/connection.ts';
import { runConsumer, type RunningConsumer } from '../queue/consume.ts';
import { WebhookDelivery } from '../queue/schemas.ts';
import { CONSUMERS, STREAMS } from '../queue/subjects.ts';
import { safeJson } from '../predictions/apply-events.ts';
import { deliverWebhook } from './deliver.ts';
import { nextDelayMs } from './retry-policy.ts';

export interface DispatcherOptions {
  queue: Queue;
  logger: Logger;
  secret: string;
  scheduleMs: readonly number[];
  timeoutMs: number;
  allowPrivateUrls: boolean;
  concurrency?: number;
}

/**
 * Sends queued webhook deliveries. JetStream holds each delivery until it is acked, so a
 * restart of the API resumes pending ones; a retry is a nak with the next delay of the
 * schedule, and the same webhook-id is sent every time.
 */
export function startWebhookDispatcher(options: DispatcherOptions): RunningConsumer {
  const logger = options.logger.child({ component: 'webhooks' });
  return runConsumer({
    js: options.queue.js,
    stream: STREAMS.webhooks,
    consumer: CONSUMERS.webhookDispatcher,
    logger,
    concurrency: options.concurrency ?? 16,
    handle: async (msg) => {
      const parsed = WebhookDelivery.safeParse(safeJson(msg));
      if (!parsed.success) {
        logger.error({ subject: msg.subject }, 'malformed webhook delivery dropped');
        msg.term();
        return;
      }
      const delivery = parsed.data;
      const attempt = msg.info.deliveryCount;
      // Attempts are not acked for their whole duration: keep the message ours meanwhile.
      const keepAlive = setInterval(() => msg.working(), 20_000);
      const outcome = await deliverWebhook({
        url: delivery.url,
        body: delivery.body,
        msgId: delivery.deliveryId,
        secret: options.secret,
        timeoutMs: options.timeoutMs,
        policy: { allowPrivate: options.allowPrivateUrls },
        userAgent: 'qr-art-webhooks/1',
      }).finally(() => clearInterval(keepAlive));
      const context = { deliveryId: delivery.deliveryId, predictionId: delivery.predictionId, attempt };
      if (outcome.kind === 'delivered') {
        logger.info({ ...context, status: outcome.status }, 'webhook delivered');
        msg.ack();
        return;
      }
      if (outcome.kind === 'give_up') {
        logger.warn({ ...context, reason: outcome.reason, status: outcome.status }, 'webhook given up');
        msg.term();
        return;
      }
      const delay = nextDelayMs(attempt, options.scheduleMs, outcome.retryAfter ?? null);
      if (delay === null) {
        logger.warn({ ...context, reason: outcome.reason }, 'webhook retries exhausted');
        msg.term();
        return;
      }
      logger.info({ ...context, reason: outcome.reason, status: outcome.status, retryInMs: delay }, 'webhook will be retried');
      msg.nak(delay);
    },
  });
}
