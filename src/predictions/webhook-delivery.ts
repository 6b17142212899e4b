import type { OutboxMessage } from '../store/outbox.ts';
import type { PredictionRecord } from '../store/prediction-record.ts';
import { subjects } from '../queue/subjects.ts';
import type { WebhookDelivery } from '../messages/schemas.ts';

/**
 * The webhook for one status change. Its id is stable (prediction + status), so retries
 * carry the same webhook-id and a receiver can deduplicate; the body is the get-prediction
 * response as it was at the change.
 */
export function webhookDeliveryFor(record: PredictionRecord, url: string): OutboxMessage {
  const status = record.status as WebhookDelivery['status'];
  const deliveryId = `msg_${record.id}_${status}`;
  const payload: WebhookDelivery = {
    deliveryId,
    predictionId: record.id,
    status,
    url,
    body: JSON.stringify({ success: true, data: record }),
  };
  return { subject: subjects.webhook(record.id, status), msgId: deliveryId, payload };
}
