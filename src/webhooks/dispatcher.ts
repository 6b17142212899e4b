import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { Queue } from '../queue/connection.ts';
import { runConsumer, type RunningConsumer } from '../queue/consume.ts';
import { WebhookDelivery } from '../messages/schemas.ts';
import { CONSUMERS, STREAMS } from '../queue/subjects.ts';
import { safeJson } from '../predictions/apply-events.ts';
import { deliverWebhook, type DeliveryOutcome } from './deliver.ts';
import { createDestinationSlots, createThrottledNotice, deferralDelayMs, destinationOf, DEFAULT_PER_DESTINATION } from './destination-slots.ts';
import { deliveryOrder } from './prediction-order.ts';
import { nextDelayMs } from './retry-policy.ts';

/** Attempts in flight over all destinations, by default. */
export const DEFAULT_WEBHOOK_CONCURRENCY = 256;
/** A recurring "destination busy" or "all slots in use" condition is logged at most this often. */
const NOTICE_INTERVAL_MS = 60_000;

/** Where delivery attempts and deferrals are counted (the API's metrics; declared here so this layer needs nothing above it). */
export interface DeliveryRecorder {
  webhookAttempted(outcome: 'delivered' | 'retry' | 'given_up', seconds: number): void;
  webhookDeferred(): void;
}

export interface DispatcherOptions {
  queue: Queue;
  logger: Logger;
  secret: string;
  scheduleMs: readonly number[];
  timeoutMs: number;
  allowPrivateUrls: boolean;
  /** Attempts in flight over all destinations (default 256). */
  concurrency?: number;
  /** Attempts in flight to one destination, i.e. URL scheme + host + port (default 2). */
  perDestination?: number;
  /** Where attempts and deferrals are counted (absent: not counted). */
  metrics?: DeliveryRecorder;
}

/**
 * Sends queued webhook deliveries. JetStream holds each delivery until it is acked, so a
 * restart of the API resumes pending ones.
 *
 * Isolation. Attempts are limited per destination (URL scheme, host and port): at most
 * `perDestination` (2) at a time, out of `concurrency` (256) in all. A delivery pulled while
 * its destination is at its limit is nak'ed back for a moment (0.25 s, doubling per
 * redelivery up to 5 s) instead of waiting in a slot, so the pull keeps flowing past
 * deliveries that wait on a slow receiver. A receiver that never answers therefore holds
 * at most 2 slots, for WEBHOOK_TIMEOUT_MS each. The bound, as documented in docs/api.md:
 * while fewer than concurrency / perDestination (128) destinations are slow at once, a
 * delivery to any other destination with fewer than 2 attempts of its own in flight starts
 * within 1 s of being queued (milliseconds in practice), however many deliveries wait on
 * the slow ones; test/webhooks/isolation.test.ts checks this with 40 receivers that never
 * answer. With more slow destinations than that every slot can be taken; the pull then
 * waits for one, and each frees within WEBHOOK_TIMEOUT_MS.
 *
 * Order. A prediction's terminal webhook waits while its `executing` one is still to be settled,
 * and an `executing` one is dropped once the prediction has finished (prediction-order.ts):
 * a receiver never sees a prediction go backwards, even when a retry or a busy destination
 * held the earlier one back.
 *
 * Retries. A failed attempt is queued again as a copy carrying the next attempt number and
 * a `notBefore` (the schedule's delay, or a longer Retry-After), and the original is acked;
 * the copy is nak'ed until it is due. Every attempt sends the same webhook-id (deliveryId).
 * The attempt number travels in the message because JetStream's redelivery count also
 * counts the deferrals above, which are not attempts.
 */
export function startWebhookDispatcher(options: DispatcherOptions): RunningConsumer {
  const logger = options.logger.child({ component: 'webhooks' });
  const concurrency = options.concurrency ?? DEFAULT_WEBHOOK_CONCURRENCY;
  const perDestination = options.perDestination ?? DEFAULT_PER_DESTINATION;
  const slots = createDestinationSlots(perDestination);
  const destinationBusy = createThrottledNotice(NOTICE_INTERVAL_MS);
  const allSlotsInUse = createThrottledNotice(NOTICE_INTERVAL_MS);

  const defer = (msg: JsMsg, destination: string): void => {
    const delayMs = deferralDelayMs(msg.info.deliveryCount);
    const deferred = destinationBusy(destination);
    if (deferred !== null) {
      logger.warn({ destination, perDestination, deferred }, 'webhook destination at its limit of attempts in flight; deferring its other deliveries');
    }
    options.metrics?.webhookDeferred();
    msg.nak(delayMs);
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    const parsed = WebhookDelivery.safeParse(safeJson(msg));
    if (!parsed.success) {
      logger.error({ subject: msg.subject }, 'malformed webhook delivery dropped');
      msg.term();
      return;
    }
    const delivery = parsed.data;
    // A queued retry, or one redelivered early after a restart: wait out its delay.
    const dueInMs = delivery.notBefore === undefined ? 0 : Date.parse(delivery.notBefore) - Date.now();
    if (dueInMs > 0) {
      msg.nak(dueInMs);
      return;
    }
    // One prediction's webhooks in order, whichever replica holds which (prediction-order.ts).
    const order = await deliveryOrder(options.queue.jsm, delivery);
    if (order === 'superseded') {
      logger.info({ deliveryId: delivery.deliveryId, predictionId: delivery.predictionId }, 'executing webhook not sent: the prediction has finished');
      msg.ack();
      return;
    }
    if (order === 'wait') {
      msg.nak(deferralDelayMs(msg.info.deliveryCount));
      return;
    }
    const destination = destinationOf(delivery.url);
    const release = slots.tryAcquire(destination);
    if (!release) {
      defer(msg, destination);
      return;
    }
    if (slots.total >= concurrency) {
      const times = allSlotsInUse('all');
      if (times !== null) logger.warn({ concurrency, times }, 'all webhook slots in use; further deliveries wait for one to free');
    }
    let outcome: DeliveryOutcome;
    const started = performance.now();
    try {
      outcome = await sendAttempt(msg, delivery);
    } finally {
      release();
    }
    await settle(msg, delivery, destination, outcome, (performance.now() - started) / 1000);
  };

  const sendAttempt = async (msg: JsMsg, delivery: WebhookDelivery): Promise<DeliveryOutcome> => {
    // Attempts are not acked for their whole duration: keep the message ours meanwhile.
    const keepAlive = setInterval(() => msg.working(), 20_000);
    try {
      return await deliverWebhook({
        url: delivery.url,
        body: delivery.body,
        msgId: delivery.deliveryId,
        secret: options.secret,
        timeoutMs: options.timeoutMs,
        policy: { allowPrivate: options.allowPrivateUrls },
        userAgent: 'qr-art-webhooks/1',
      });
    } finally {
      clearInterval(keepAlive);
    }
  };

  const settle = async (msg: JsMsg, delivery: WebhookDelivery, destination: string, outcome: DeliveryOutcome, seconds: number): Promise<void> => {
    const attemptNumber = delivery.attempt ?? 1;
    const context = { deliveryId: delivery.deliveryId, predictionId: delivery.predictionId, destination, attempt: attemptNumber };
    if (outcome.kind === 'delivered') {
      options.metrics?.webhookAttempted('delivered', seconds);
      logger.info({ ...context, status: outcome.status }, 'webhook delivered');
      msg.ack();
      return;
    }
    if (outcome.kind === 'give_up') {
      options.metrics?.webhookAttempted('given_up', seconds);
      logger.warn({ ...context, reason: outcome.reason, status: outcome.status }, 'webhook given up');
      msg.term();
      return;
    }
    const delayMs = nextDelayMs(attemptNumber, options.scheduleMs, outcome.retryAfter ?? null);
    if (delayMs === null) {
      options.metrics?.webhookAttempted('given_up', seconds);
      logger.warn({ ...context, reason: outcome.reason }, 'webhook retries exhausted');
      msg.term();
      return;
    }
    options.metrics?.webhookAttempted('retry', seconds);
    logger.info({ ...context, reason: outcome.reason, status: outcome.status, retryInMs: delayMs }, 'webhook will be retried');
    await queueRetry(options.queue.js, msg, delivery, attemptNumber + 1, delayMs, logger);
  };

  return runConsumer({
    js: options.queue.js,
    stream: STREAMS.webhooks,
    consumer: CONSUMERS.webhookDispatcher,
    logger,
    // Only attempts hold these: deferred deliveries are handed back at once.
    concurrency,
    handle,
  });
}

/**
 * Replaces a failed delivery by a copy for the next attempt, due after `delayMs`. The copy
 * is published before the original is acked, so a crash in between leaves two (a receiver
 * may see the same webhook-id twice) rather than none; its msgID makes publishing the same
 * step again a no-op within the stream's duplicate window.
 */
async function queueRetry(js: JetStreamClient, msg: JsMsg, delivery: WebhookDelivery, nextAttempt: number, delayMs: number, logger: Logger): Promise<void> {
  const copy: WebhookDelivery = { ...delivery, attempt: nextAttempt, notBefore: new Date(Date.now() + delayMs).toISOString() };
  try {
    await js.publish(msg.subject, JSON.stringify(copy), { msgID: `${delivery.deliveryId}#${nextAttempt}` });
  } catch (error) {
    // The retry still happens, from the original: after the same delay when the nak reaches the
    // server, after the ack wait when NATS is away too (the nak is lost with the publish). It
    // repeats this attempt's number, so the schedule gets one extra try rather than losing the delivery.
    logger.warn({ err: error, deliveryId: delivery.deliveryId }, 'could not queue the webhook retry; redelivering the original instead');
    msg.nak(delayMs);
    return;
  }
  msg.ack();
}
