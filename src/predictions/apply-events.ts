import type { Logger } from 'pino';
import type { JsMsg } from '@nats-io/jetstream';
import type { Database } from '../store/database.ts';
import type { PredictionRecord, PredictionStatus } from '../store/prediction-record.ts';
import { applyTransition, transitionFromEvent } from '../store/prediction-transitions.ts';
import type { Queue } from '../queue/connection.ts';
import { runConsumer, type RunningConsumer } from '../queue/consume.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import { StatusEvent } from '../messages/schemas.ts';
import { CONSUMERS, STREAMS } from '../queue/subjects.ts';
import { webhookDeliveryFor } from './webhook-delivery.ts';
import { followChange, type RefundRecorder } from './status-change.ts';

/**
 * Applies worker status events to the records. Idempotent and monotonic (the store
 * refuses to move a record backwards or twice into one state), so redelivered or
 * reordered events are harmless; the message is acked only after the transaction commits.
 *
 * Every API replica pulls from the same durable consumer, so one prediction's events are
 * applied in parallel by different replicas, and a replica killed while holding one gets it
 * redelivered to another only after the consumer's ack wait (30 s): an `executing` can then
 * be applied well after `executed`. Ordering is therefore not relied on: each event carries
 * what it needs (a terminal event its start time) and applyTransition merges them the same
 * way whatever the order.
 */
/** Where applied events and refunds are counted (the API's metrics; declared here so this layer needs nothing above it). */
export interface EventRecorder extends RefundRecorder {
  eventApplied(status: PredictionStatus, at: string): void;
}

export function startEventApplier(deps: {
  db: Database;
  queue: Queue;
  relay: OutboxRelay;
  logger: Logger;
  publicBaseUrl: () => string;
  onChange: (record: PredictionRecord) => void;
  metrics?: EventRecorder;
}): RunningConsumer {
  const logger = deps.logger.child({ component: 'event-applier' });
  return runConsumer({
    js: deps.queue.js,
    stream: STREAMS.events,
    consumer: CONSUMERS.eventApplier,
    logger,
    handle: async (msg: JsMsg) => {
      const parsed = StatusEvent.safeParse(safeJson(msg));
      if (!parsed.success) {
        logger.error({ subject: msg.subject, issues: parsed.error.issues }, 'malformed status event dropped');
        msg.term();
        return;
      }
      const event = parsed.data;
      const change = await applyTransition(deps.db, event.predictionId, transitionFromEvent(event, (name) => `${deps.publicBaseUrl()}/v1/files/${name}`), webhookDeliveryFor);
      if (change.applied) {
        deps.metrics?.eventApplied(event.status, event.at);
        logger.info({ predictionId: event.predictionId, status: event.status, workerId: event.workerId }, 'prediction status changed');
        followChange(deps, change);
      } else if (change.corrected) {
        deps.onChange(change.corrected);
        logger.info({ predictionId: event.predictionId, startedAt: change.corrected.startedAt }, 'late executing event folded into the finished record');
      } else {
        logger.debug({ predictionId: event.predictionId, status: event.status, current: change.current }, 'status event ignored');
      }
      msg.ack();
    },
  });
}

export function safeJson(msg: { data: Uint8Array }): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(msg.data));
  } catch {
    return undefined;
  }
}
