import type { PredictionError } from '../messages/schemas.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import type { Database } from '../store/database.ts';
import type { PredictionRecord } from '../store/prediction-record.ts';
import { applyTransition, type StatusChange } from '../store/prediction-transitions.ts';
import { webhookDeliveryFor } from './webhook-delivery.ts';

/** Where refunds are counted (the API's metrics; declared here so this layer needs nothing above it). */
export interface RefundRecorder {
  creditsRefunded(workflow: string, credits: number): void;
}

/** Who hears of a status change the API applied: the refund counter, the read cache, the webhook relay. */
export interface ChangeFollowers {
  readonly relay: OutboxRelay;
  readonly onChange: (record: PredictionRecord) => void;
  readonly metrics?: RefundRecorder;
}

/** What follows an applied change, wherever it came from (a worker's event, MaxDeliver, expiry). */
export function followChange(followers: ChangeFollowers, change: Extract<StatusChange, { applied: true }>): void {
  if (change.refundedCredits > 0) followers.metrics?.creditsRefunded(change.workflow, change.refundedCredits);
  followers.onChange(change.record);
  followers.relay.publish(change.outbox);
}

/** Fails a prediction the API gives up on, refunding it (once), and lets the followers know. */
export async function failWithRefund(deps: ChangeFollowers & { readonly db: Database }, predictionId: string, error: PredictionError): Promise<StatusChange> {
  const change = await applyTransition(deps.db, predictionId, { status: 'failed', at: new Date().toISOString(), refund: true, error }, webhookDeliveryFor);
  if (change.applied) followChange(deps, change);
  return change;
}
