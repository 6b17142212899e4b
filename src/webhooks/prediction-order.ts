/**
 * The order of one prediction's webhooks, kept across API replicas by the webhooks stream
 * itself. Each delivery waits in the stream until it is settled (a work queue), on the subject
 * `qrart.webhooks.<predictionId>.<status>`, so "is a delivery of this prediction with that
 * status still to be settled" is one lookup of the last message on a subject.
 *
 * What a receiver gets: never a prediction going backwards.
 * - A terminal delivery (executed, failed) waits while the prediction's `executing` delivery is
 *   still in the stream: in flight, deferred for a busy destination, or waiting for a retry.
 *   One waiting for a retry due more than RETRY_SUPERSEDE_MARGIN_MS from now is deleted
 *   instead (it cannot be in flight): the terminal body carries `startedAt`, so the receiver
 *   loses nothing but a status it would have seen after the end.
 * - An `executing` delivery is superseded, dropped unsent, once the prediction has finished: its
 *   terminal delivery is in the stream, or the worker's terminal event is in the events stream
 *   (the terminal delivery may have gone out already, when this one was published late by the
 *   outbox sweep after a broker hiccup).
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import { WebhookDelivery } from '../messages/schemas.ts';
import { safeJson } from '../predictions/apply-events.ts';
import { STREAMS, subjects } from '../queue/subjects.ts';

/** A retry due further away than this cannot be in flight, so it may be deleted. */
const RETRY_SUPERSEDE_MARGIN_MS = 1000;
/** Enough for the original and its retry copy, which overlap for a moment while the copy is queued. */
const MAX_DELETIONS = 4;

type DeliveryStatus = WebhookDelivery['status'];
const TERMINAL: readonly DeliveryStatus[] = ['executed', 'failed'];

/** send: go ahead; wait: an earlier status is still to be settled; superseded: drop it unsent. */
export type DeliveryOrder = 'send' | 'wait' | 'superseded';

/** The last delivery queued for this prediction and status, with its stream sequence; null when none is left. */
async function pending(jsm: JetStreamManager, predictionId: string, status: DeliveryStatus): Promise<{ seq: number; delivery: WebhookDelivery | null } | null> {
  const stored = await jsm.streams.getMessage(STREAMS.webhooks, { last_by_subj: subjects.webhook(predictionId, status) });
  if (!stored) return null;
  const parsed = WebhookDelivery.safeParse(safeJson(stored));
  return { seq: stored.seq, delivery: parsed.success ? parsed.data : null };
}

/** Whether the last status event a worker published for the prediction is a terminal one. */
async function finishedByWorker(jsm: JetStreamManager, predictionId: string): Promise<boolean> {
  const stored = await jsm.streams.getMessage(STREAMS.events, { last_by_subj: subjects.event(predictionId) });
  if (!stored) return false;
  // A malformed event (the applier dropped it) says nothing.
  const status = (safeJson(stored) as { status?: unknown } | undefined)?.status;
  return status === 'executed' || status === 'failed';
}

export async function deliveryOrder(jsm: JetStreamManager, delivery: WebhookDelivery, now = Date.now()): Promise<DeliveryOrder> {
  if (delivery.status === 'executing') {
    for (const status of TERMINAL) if (await pending(jsm, delivery.predictionId, status)) return 'superseded';
    return (await finishedByWorker(jsm, delivery.predictionId)) ? 'superseded' : 'send';
  }
  for (let deletions = 0; deletions <= MAX_DELETIONS; deletions++) {
    const earlier = await pending(jsm, delivery.predictionId, 'executing');
    if (!earlier) return 'send';
    const dueAt = earlier.delivery?.notBefore === undefined ? 0 : Date.parse(earlier.delivery.notBefore);
    if (dueAt - now <= RETRY_SUPERSEDE_MARGIN_MS) return 'wait';
    // Settled meanwhile (acked, or deleted by another replica): the next lookup says so.
    await jsm.streams.deleteMessage(STREAMS.webhooks, earlier.seq, false).catch(() => false);
  }
  return 'wait';
}
