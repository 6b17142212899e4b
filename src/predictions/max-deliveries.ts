import type { Logger } from 'pino';
import { z } from 'zod';
import type { Database } from '../store/database.ts';
import type { PredictionRecord } from '../store/prediction-record.ts';
import type { Queue } from '../queue/connection.ts';
import { runConsumer, type RunningConsumer } from '../queue/consume.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import { JobMessage } from '../messages/schemas.ts';
import { CONSUMERS, STREAMS } from '../queue/subjects.ts';
import { safeJson } from './apply-events.ts';
import { failWithRefund, type RefundRecorder } from './status-change.ts';

const MaxDeliveriesAdvisory = z.object({ stream: z.string(), stream_seq: z.number().int().positive() });

/**
 * A job that no worker finished within MaxDeliver attempts stays in the work-queue
 * stream; the server announces it with an advisory (captured in a stream). We fail the
 * prediction with a refund, then remove the job so it cannot run later.
 */
export function startMaxDeliveryHandler(deps: {
  db: Database;
  queue: Queue;
  relay: OutboxRelay;
  logger: Logger;
  onChange: (record: PredictionRecord) => void;
  metrics?: RefundRecorder;
}): RunningConsumer {
  const logger = deps.logger.child({ component: 'max-deliveries' });
  return runConsumer({
    js: deps.queue.js,
    stream: STREAMS.jobAdvisories,
    consumer: CONSUMERS.maxDeliveries,
    logger,
    handle: async (msg) => {
      const advisory = MaxDeliveriesAdvisory.safeParse(safeJson(msg));
      if (!advisory.success) {
        msg.term();
        return;
      }
      const seq = advisory.data.stream_seq;
      // null: no such message (already removed). An error (a JetStream API timeout) is thrown:
      // the advisory is delivered again, so the prediction is still failed and refunded.
      const stored = await deps.queue.jsm.streams.getMessage(STREAMS.jobs, { seq });
      const job = stored ? JobMessage.safeParse(safeJson(stored)) : null;
      if (job?.success) {
        const change = await failWithRefund(deps, job.data.id, {
          code: 'worker_gave_up',
          message: 'The prediction could not be completed after repeated attempts; the credits were refunded.',
        });
        logger.warn({ predictionId: job.data.id, applied: change.applied }, 'job reached MaxDeliver: prediction failed and refunded');
      } else {
        logger.warn({ seq }, 'MaxDeliver advisory for a job no longer in the stream');
      }
      await deps.queue.jsm.streams.deleteMessage(STREAMS.jobs, seq).catch(() => false);
      msg.ack();
    },
  });
}
