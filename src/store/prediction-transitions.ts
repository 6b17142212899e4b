/**
 * A worker's status event applied to its prediction: forward only, once per state, with the
 * refund and the webhook's outbox row in the same transaction.
 */
import type { PredictionError, PredictionOutput, StatusEvent } from '../messages/schemas.ts';
import { NSFW_ERROR, NSFW_OUTPUT } from '../messages/schemas.ts';
import type { Database } from './database.ts';
import { enqueueOutbox, type OutboxMessage, type PendingOutboxMessage } from './outbox.ts';
import { PREDICTION_COLUMNS, STATUS_RANK as RANK, toRecord, type PredictionRecord, type PredictionRow, type PredictionStatus } from './prediction-record.ts';
import { centsToCredits } from '../workflows/pricing.ts';

export type StatusChange =
  | { applied: false; current: PredictionStatus | null; /** A late `executing` set the start of a finished record. */ corrected?: PredictionRecord }
  | {
      applied: true;
      record: PredictionRecord;
      webhook: string | null;
      outbox: PendingOutboxMessage[];
      workflow: string;
      /** Credits this change gave back (0 without a refund, and for a refund already made). */
      refundedCredits: number;
    };

export type Transition =
  | { status: 'executing'; at: string }
  | { status: 'executed'; at: string; startedAt?: string | undefined; output: PredictionOutput; isScanables: boolean[] }
  | { status: 'failed'; at: string; startedAt?: string | undefined; error: PredictionError; refund: boolean; output?: string };

function outputOf(event: Extract<StatusEvent, { status: 'executed' }>, fileUrl: (name: string) => string): PredictionOutput {
  return {
    images: event.images.map(fileUrl),
    ...(event.caption !== undefined ? { caption: event.caption } : {}),
    ...(event.scanRobustness !== undefined ? { scanRobustness: event.scanRobustness } : {}),
  };
}

export function transitionFromEvent(event: StatusEvent, fileUrl: (name: string) => string): Transition {
  switch (event.status) {
    case 'executing':
      return { status: 'executing', at: event.at };
    case 'executed':
      return { status: 'executed', at: event.at, startedAt: event.startedAt, output: outputOf(event, fileUrl), isScanables: event.isScanables };
    case 'failed':
      // The spec fixes the NSFW error text and output; a worker cannot change them.
      return event.nsfw
        ? { status: 'failed', at: event.at, startedAt: event.startedAt, error: NSFW_ERROR, refund: false, output: NSFW_OUTPUT }
        : { status: 'failed', at: event.at, startedAt: event.startedAt, error: event.error, refund: true };
  }
}

/**
 * Moves a prediction forward; never backwards, never twice into the same state
 * (queued → executing → executed | failed). A failure with refund returns the charge
 * through the ledger, whose unique index makes a second refund impossible. The webhook
 * delivery for the change is written to the outbox in the same transaction.
 *
 * Events may arrive in any order, so each one sets its own facts: a terminal event sets
 * startedAt from the start it carries when no `executing` came first, and an `executing`
 * that arrives after the end only moves startedAt to its own (earlier) time. That late
 * `executing` sends no webhook: the terminal webhook already told the story, with startedAt,
 * and a receiver must never see a prediction go back to executing (docs/api.md).
 */
export async function applyTransition(
  db: Database,
  predictionId: string,
  transition: Transition,
  webhookFor: (record: PredictionRecord, webhook: string) => OutboxMessage,
): Promise<StatusChange> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<PredictionRow & { workflow: string }>(`SELECT ${PREDICTION_COLUMNS}, workflow FROM predictions WHERE id = $1 FOR UPDATE`, [predictionId]);
    const row = rows[0];
    if (!row) return { applied: false, current: null };
    if (transition.status === 'executing' && RANK[row.status] === 2) {
      const { rows: corrected } = await tx.query<PredictionRow>(
        `UPDATE predictions SET started_at = $2 WHERE id = $1 AND (started_at IS NULL OR started_at > $2) RETURNING ${PREDICTION_COLUMNS}`,
        [predictionId, transition.at],
      );
      return corrected[0] ? { applied: false, current: row.status, corrected: toRecord(corrected[0]) } : { applied: false, current: row.status };
    }
    if (RANK[transition.status] <= RANK[row.status]) return { applied: false, current: row.status };

    let updated: PredictionRow[];
    let refundedCredits = 0;
    switch (transition.status) {
      case 'executing':
        ({ rows: updated } = await tx.query<PredictionRow>(
          `UPDATE predictions SET status = 'executing', started_at = $2, updated_at = now()
            WHERE id = $1 RETURNING ${PREDICTION_COLUMNS}`,
          [predictionId, transition.at],
        ));
        break;
      case 'executed':
        ({ rows: updated } = await tx.query<PredictionRow>(
          `UPDATE predictions SET status = 'executed', output = $2::jsonb, is_scanables = $3::jsonb,
              started_at = coalesce(started_at, $5, $4), completed_at = $4, updated_at = now()
            WHERE id = $1 RETURNING ${PREDICTION_COLUMNS}`,
          [predictionId, JSON.stringify(transition.output), JSON.stringify(transition.isScanables), transition.at, transition.startedAt ?? null],
        ));
        break;
      case 'failed': {
        if (transition.refund) {
          const { rows: refunds } = await tx.query(
            `INSERT INTO credit_ledger (user_id, delta_cents, reason, prediction_id)
             VALUES ($1, $2, 'refund', $3) ON CONFLICT DO NOTHING RETURNING id`,
            [row.user_id, Number(row.credits_cents), predictionId],
          );
          if (refunds.length > 0) {
            await tx.query('UPDATE users SET balance_cents = balance_cents + $2 WHERE id = $1', [row.user_id, Number(row.credits_cents)]);
            refundedCredits = centsToCredits(Number(row.credits_cents));
          }
        }
        ({ rows: updated } = await tx.query<PredictionRow>(
          `UPDATE predictions SET status = 'failed', error = $2::jsonb, output = $3::jsonb, refunded = $4,
              started_at = coalesce(started_at, $6), completed_at = $5, updated_at = now()
            WHERE id = $1 RETURNING ${PREDICTION_COLUMNS}`,
          [predictionId, JSON.stringify(transition.error), JSON.stringify(transition.output ?? ''), transition.refund, transition.at, transition.startedAt ?? null],
        ));
        break;
      }
    }
    const record = toRecord(updated[0]!);
    const outbox = row.webhook ? await enqueueOutbox(tx, [webhookFor(record, row.webhook)]) : [];
    return { applied: true, record, webhook: row.webhook, outbox, workflow: row.workflow, refundedCredits };
  });
}
