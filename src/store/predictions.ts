/**
 * Creating predictions (charge, record, job and Idempotency-Key in one transaction) and reading
 * them back. Status changes from the workers are in prediction-transitions.ts.
 */
import type { Database, Queryable } from './database.ts';
import { claimId, DEFAULT_IDEMPOTENCY_TTL_MS, findLiveKeys, IdempotencyKeyReusedError, recordKeys, type IdempotencyClaim } from './idempotency.ts';
import { enqueueOutbox, type OutboxMessage, type PendingOutboxMessage } from './outbox.ts';
import { PREDICTION_COLUMNS, toListed, toRecord, type ListedPrediction, type PredictionRecord, type PredictionRow } from './prediction-record.ts';
import { centsToCredits } from '../workflows/pricing.ts';

function newRecord(prediction: NewPrediction, createdAtMs: number): PredictionRecord {
  const at = new Date(createdAtMs).toISOString();
  return {
    id: prediction.id,
    userId: prediction.userId,
    createdAt: at,
    startedAt: null,
    updatedAt: at,
    completedAt: null,
    status: 'queued',
    input: prediction.input,
    output: '',
    error: null,
    refunded: false,
    creditType: 'API_CREDITS',
    isScanables: [],
    credits: centsToCredits(prediction.costCents),
  };
}

let lastMicros = 0;

/** Strictly increasing microsecond timestamps, one per row of a batch. */
function batchTimestamps(count: number): { iso: string; ms: number }[] {
  const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  lastMicros = Math.max(now, lastMicros + 1);
  const first = lastMicros;
  lastMicros += count - 1;
  return Array.from({ length: count }, (_, index) => {
    const micros = first + index;
    const ms = Math.floor(micros / 1000);
    const iso = `${new Date(ms).toISOString().slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
    return { iso, ms };
  });
}

export class InsufficientCreditsError extends Error {
  constructor(
    readonly requiredCents: number,
    readonly balanceCents: number,
  ) {
    super(`this prediction costs ${creditsText(requiredCents)} and the balance is ${centsToCredits(balanceCents)}`);
  }
}

/** "1 credit", "2.49 credits". */
const creditsText = (cents: number): string => `${centsToCredits(cents)} credit${cents === 100 ? '' : 's'}`;

export interface NewPrediction {
  id: string;
  userId: string;
  workflow: string;
  input: Record<string, unknown>;
  imageCount: number;
  costCents: number;
  webhook: string | null;
  /** The job message, written to the outbox in the same transaction. */
  job: OutboxMessage;
  /** The client's Idempotency-Key, when it sent one. */
  idempotency?: IdempotencyClaim | undefined;
}

/** `replayed`: the Idempotency-Key was seen before; the record is the one it created (nothing charged now). */
export type CreateResult =
  | { ok: true; record: PredictionRecord; replayed: boolean }
  | { ok: false; error: InsufficientCreditsError | IdempotencyKeyReusedError };

type Outcome = InsufficientCreditsError | IdempotencyKeyReusedError | NewPrediction | { replayOf: string };

/**
 * Charges each user and records each prediction and its job, all in one transaction:
 * for every accepted prediction the charge, the record, the ledger entry and the job
 * exist together or not at all. The users' rows are locked first, so concurrent creates
 * (in this process or another API replica) are serialised on them and a balance can
 * never go below zero; the CHECK constraint is the last line of defence. Predictions are
 * accepted in array order while the balance covers them; the others are refused with
 * InsufficientCreditsError. Statements are set-based, so a batch of any size costs the
 * same handful of round trips (group commit under load).
 */
export async function createPredictions(
  db: Database,
  batch: readonly NewPrediction[],
  options: {
    idempotencyTtlMs?: number;
    /**
     * Told the transaction's id (pg_current_xact_id) once it writes: should its COMMIT go
     * unanswered, `transactionState` says whether it committed, aborted or is still committing.
     */
    onTransactionId?: (xid: string) => void;
  } = {},
): Promise<{ results: CreateResult[]; outbox: PendingOutboxMessage[] }> {
  if (batch.length === 0) return { results: [], outbox: [] };
  return db.transaction(async (tx) => {
    const userIds = [...new Set(batch.map((prediction) => prediction.userId))].sort();
    const { rows: users } = await tx.query<{ id: string; balance_cents: string | number }>(
      'SELECT id, balance_cents FROM users WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
      [userIds],
    );
    // With the users locked, no other create of theirs can commit a key meanwhile.
    const claimed = batch.flatMap((p) => (p.idempotency ? [{ userId: p.userId, key: p.idempotency.key }] : []));
    const liveKeys = await findLiveKeys(tx, claimed, options.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS);
    const firstInBatch = new Map<string, NewPrediction>();
    const balances = new Map(users.map((user) => [user.id, Number(user.balance_cents)]));
    const accepted: NewPrediction[] = [];
    const charge = (prediction: NewPrediction): Outcome => {
      const balance = balances.get(prediction.userId) ?? 0;
      if (balance < prediction.costCents) return new InsufficientCreditsError(prediction.costCents, balance);
      balances.set(prediction.userId, balance - prediction.costCents);
      accepted.push(prediction);
      return prediction;
    };
    const outcomes: Outcome[] = batch.map((prediction) => {
      if (prediction.idempotency) {
        const id = claimId(prediction.userId, prediction.idempotency.key);
        const recorded = liveKeys.get(id);
        if (recorded) {
          if (recorded.requestHash !== prediction.idempotency.requestHash) return new IdempotencyKeyReusedError(prediction.idempotency.key);
          return { replayOf: recorded.predictionId };
        }
        const first = firstInBatch.get(id);
        if (first) {
          if (first.idempotency!.requestHash !== prediction.idempotency.requestHash) return new IdempotencyKeyReusedError(prediction.idempotency.key);
          return { replayOf: first.id };
        }
        const outcome = charge(prediction);
        // Only an accepted create claims its key, as it would in a batch of its own: after a
        // 402 the same key may be sent again, with the same body or another.
        if (outcome === prediction) firstInBatch.set(id, prediction);
        return outcome;
      }
      return charge(prediction);
    });
    const replayed = await recordsById(tx, outcomes.flatMap((outcome) => ('replayOf' in outcome ? [outcome.replayOf] : [])));
    if (accepted.length === 0) return { results: outcomes.map((outcome) => settle(outcome, new Map(), replayed)), outbox: [] };

    const charged = userIds.filter((id) => accepted.some((prediction) => prediction.userId === id));
    const { rows: updated } = await tx.query<{ xid: string }>(
      `UPDATE users SET balance_cents = v.balance FROM unnest($1::text[], $2::bigint[]) AS v(id, balance) WHERE users.id = v.id
       RETURNING pg_current_xact_id()::text AS xid`,
      [charged, charged.map((id) => balances.get(id)!)],
    );
    if (updated[0]) options.onTransactionId?.(updated[0].xid);
    const column = <T>(pick: (prediction: NewPrediction) => T) => accepted.map(pick);
    // Creation times come from here rather than now() (one value per transaction), a
    // microsecond apart in batch order, so "newest first" holds inside a batch too. The
    // records are built here as well: RETURNING would double the cost of the insert.
    const createdAt = batchTimestamps(accepted.length);
    await tx.query(
      `INSERT INTO predictions (id, user_id, workflow, status, input, credits_cents, image_count, webhook, created_at, updated_at)
       SELECT id, user_id, workflow, 'queued', input::jsonb, credits_cents, image_count, webhook, created_at, created_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[], $7::text[], $8::timestamptz[])
           AS v(id, user_id, workflow, input, credits_cents, image_count, webhook, created_at)`,
      [
        column((p) => p.id),
        column((p) => p.userId),
        column((p) => p.workflow),
        column((p) => JSON.stringify(p.input)),
        column((p) => p.costCents),
        column((p) => p.imageCount),
        column((p) => p.webhook),
        createdAt.map((stamp) => stamp.iso),
      ],
    );
    await tx.query(
      `INSERT INTO credit_ledger (user_id, delta_cents, reason, prediction_id)
       SELECT user_id, delta, 'charge', prediction_id FROM unnest($1::text[], $2::bigint[], $3::text[]) AS v(user_id, delta, prediction_id)`,
      [column((p) => p.userId), column((p) => -p.costCents), column((p) => p.id)],
    );
    await recordKeys(
      tx,
      accepted.flatMap((p) => (p.idempotency ? [{ userId: p.userId, key: p.idempotency.key, requestHash: p.idempotency.requestHash, predictionId: p.id }] : [])),
    );
    const outbox = await enqueueOutbox(tx, column((p) => p.job));
    const records = new Map(accepted.map((p, index) => [p.id, newRecord(p, createdAt[index]!.ms)]));
    for (const [id, record] of records) replayed.set(id, record);
    return { results: outcomes.map((outcome) => settle(outcome, records, replayed)), outbox };
  });
}

/** A create's result from its outcome: a new record, a replayed one, or a refusal. */
function settle(outcome: Outcome, created: Map<string, PredictionRecord>, replayed: Map<string, PredictionRecord>): CreateResult {
  if (outcome instanceof InsufficientCreditsError || outcome instanceof IdempotencyKeyReusedError) return { ok: false, error: outcome };
  if ('replayOf' in outcome) {
    return { ok: true, record: replayed.get(outcome.replayOf)!, replayed: true };
  }
  return { ok: true, record: created.get(outcome.id)!, replayed: false };
}

/**
 * What the server says became of a transaction, by the id `onTransactionId` gave: 'in progress'
 * while its COMMIT has not finished (a synchronous standby that is behind, a stalled WAL flush),
 * and undefined when the server no longer knows (an id far older than any create in flight).
 */
export async function transactionState(db: Queryable, xid: string): Promise<'committed' | 'aborted' | 'in progress' | undefined> {
  const { rows } = await db.query<{ status: 'committed' | 'aborted' | 'in progress' | null }>('SELECT pg_xact_status($1::xid8) AS status', [xid]);
  return rows[0]?.status ?? undefined;
}

/** The predictions of these ids that exist, by id (any owner: for the service's own bookkeeping, never for a user's read). */
export async function recordsById(tx: Queryable, ids: readonly string[]): Promise<Map<string, PredictionRecord>> {
  if (ids.length === 0) return new Map();
  const { rows } = await tx.query<PredictionRow>(`SELECT ${PREDICTION_COLUMNS} FROM predictions WHERE id = ANY($1::text[])`, [[...new Set(ids)]]);
  return new Map(rows.map((row) => [row.id, toRecord(row)]));
}

/** One prediction; throws InsufficientCreditsError when the balance does not cover it. */
export async function createPrediction(db: Database, prediction: NewPrediction): Promise<PredictionRecord> {
  const {
    results: [result],
  } = await createPredictions(db, [prediction]);
  if (!result!.ok) throw result!.error;
  return result!.record;
}

/** The owner's prediction, or null for an unknown id and for another user's (never leak existence). */
export async function getPrediction(db: Queryable, userId: string, id: string): Promise<PredictionRecord | null> {
  // PostgreSQL text cannot hold U+0000 (the query would fail): no such id can exist.
  if (id.includes('\u0000')) return null;
  const { rows } = await db.query<PredictionRow>(`SELECT ${PREDICTION_COLUMNS} FROM predictions WHERE id = $1 AND user_id = $2`, [id, userId]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function listPredictions(
  db: Queryable,
  userId: string,
  page: { limit: number; offset: number },
): Promise<{ docs: ListedPrediction[]; totalDocs: number }> {
  // One statement, so the page and the total see one snapshot: two queries on a pool could see a
  // create between them (a page of 4 docs with totalDocs 3). The count's row is always there; past
  // the end its page columns are null.
  const { rows } = await db.query<{ total: string | number } & (PredictionRow | { [K in keyof PredictionRow]: null })>(
    `SELECT counted.total, page.* FROM
       (SELECT count(*) AS total FROM predictions WHERE user_id = $1) AS counted
       LEFT JOIN LATERAL (
         SELECT ${PREDICTION_COLUMNS} FROM predictions WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3
       ) AS page ON true
     ORDER BY page.created_at DESC, page.id DESC`,
    [userId, page.limit, page.offset],
  );
  const docs = rows.flatMap((row) => (row.id === null ? [] : [toListed(toRecord(row))]));
  return { docs, totalDocs: Number(rows[0]?.total ?? 0) };
}
