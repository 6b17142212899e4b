import { randomUUID } from 'node:crypto';
import type { Database } from '../store/database.ts';
import type { IdempotencyClaim } from '../store/idempotency.ts';
import type { PredictionRecord } from '../store/prediction-record.ts';
import { createPredictions, recordsById, transactionState, type CreateResult, type NewPrediction } from '../store/predictions.ts';
import { CommitUnconfirmedError, DependencyUnavailableError, waitWhileUnavailable } from '../util/unavailable.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import { subjects } from '../queue/subjects.ts';
import type { JobMessage } from '../messages/schemas.ts';
import { catalogue } from '../workflows/catalogue.ts';
import type { ParsedPrediction } from '../workflows/validate.ts';
import { centsToCredits } from '../workflows/pricing.ts';

/** How long a create whose COMMIT went unanswered keeps asking the database what committed. */
const LOOKUP_WAIT_MS = 1000;
/** Between two such questions while the COMMIT is still in progress. */
const LOOKUP_POLL_MS = 100;
/** Retry-After of a create whose outcome is unknown: the database's, as for any outage of it. */
const RETRY_AFTER_S = 2;

/**
 * The database stopped answering while a create was committing, and did not answer again in
 * time to say whether it did: the prediction may have been made and charged (a 503, but not
 * "nothing was changed").
 */
export class CreateOutcomeUnknownError extends DependencyUnavailableError {
  constructor(cause: unknown) {
    super('database', RETRY_AFTER_S, { cause });
    this.name = 'CreateOutcomeUnknownError';
  }
}

/** Where committed creates are counted (the API's metrics; declared here so this layer needs nothing above it). */
export interface CreationRecorder {
  predictionCreated(workflow: string, credits: number): void;
}

/** A create that went through: a new prediction, or the one its Idempotency-Key made before. */
export type Submitted = Extract<CreateResult, { ok: true }>;

export interface PredictionSubmitter {
  /**
   * Charges, records and queues one validated prediction; throws InsufficientCreditsError,
   * IdempotencyKeyReusedError, DependencyUnavailableError (nothing was done), or its
   * CreateOutcomeUnknownError (the database stopped answering mid-commit: it may have been done).
   */
  submit(userId: string, parsed: ParsedPrediction, idempotency?: IdempotencyClaim): Promise<Submitted>;
}

interface Waiting {
  prediction: NewPrediction;
  resolve(result: Submitted): void;
  reject(error: unknown): void;
}

/**
 * Where a validated create request goes. Requests that arrive while a transaction is
 * committing wait and go together in the next one (group commit): one request alone is
 * committed at once, a burst costs a few statements instead of a few per request.
 * After each commit the relay publishes the committed jobs straight to JetStream.
 */
export function createSubmitter(deps: { db: Database; relay: OutboxRelay; maxBatch?: number; idempotencyTtlMs?: number; metrics?: CreationRecorder }): PredictionSubmitter {
  const maxBatch = deps.maxBatch ?? 128;
  const waiting: Waiting[] = [];
  let committing = false;

  async function commit(batch: Waiting[]): Promise<void> {
    let xid: string | undefined;
    try {
      const { results, outbox } = await createPredictions(
        deps.db,
        batch.map((entry) => entry.prediction),
        { ...(deps.idempotencyTtlMs !== undefined ? { idempotencyTtlMs: deps.idempotencyTtlMs } : {}), onTransactionId: (id) => (xid = id) },
      );
      deps.relay.publish(outbox);
      results.forEach((result, index) => {
        const { prediction } = batch[index]!;
        // Committed: counted once, a replay of an Idempotency-Key charged nothing.
        if (result.ok && !result.replayed) deps.metrics?.predictionCreated(prediction.workflow, centsToCredits(prediction.costCents));
        return result.ok ? batch[index]!.resolve(result) : batch[index]!.reject(result.error);
      });
    } catch (error) {
      if (error instanceof CommitUnconfirmedError) return settleUnconfirmed(batch, xid);
      // An outage fails every request alike; retrying them one by one would only wait longer.
      if (batch.length === 1 || error instanceof DependencyUnavailableError) {
        for (const entry of batch) entry.reject(error);
        return;
      }
      // One bad row must not fail the others: retry each on its own.
      for (const entry of batch) await commit([entry]);
    }
  }

  /**
   * The COMMIT's answer was lost. The database says what became of the transaction: aborted
   * (or it never wrote: no id), and the batch goes through again, each at most once since its
   * ids are the same; committed, and a prediction that exists was made (and charged) and is
   * answered as made, the others (refused or replayed inside the transaction) go through again.
   * A COMMIT still in progress (a synchronous standby behind, a stalled flush; its rows not yet
   * visible) is waited for, never run again beside it: it would wait on the users' rows the
   * COMMIT holds and then answer a 503 or 402 for a prediction that was made. Without an answer
   * in time the request learns that its create may have been made.
   */
  async function settleUnconfirmed(batch: Waiting[], xid: string | undefined): Promise<void> {
    let made: Map<string, PredictionRecord> | undefined;
    try {
      made = await waitWhileUnavailable(() => madeBy(batch, xid), LOOKUP_WAIT_MS, () => undefined);
    } catch (error) {
      for (const entry of batch) entry.reject(new CreateOutcomeUnknownError(error));
      return;
    }
    const again: Waiting[] = [];
    for (const entry of batch) {
      const record = made.get(entry.prediction.id);
      if (!record) {
        again.push(entry);
        continue;
      }
      // Its job waits in the outbox table: the relay's sweep publishes it.
      deps.metrics?.predictionCreated(entry.prediction.workflow, centsToCredits(entry.prediction.costCents));
      entry.resolve({ ok: true, record, replayed: false });
    }
    if (again.length > 0) await commit(again);
  }

  /** The batch's predictions the transaction made (none when it aborted); waits out a COMMIT in progress, up to LOOKUP_WAIT_MS. */
  async function madeBy(batch: Waiting[], xid: string | undefined): Promise<Map<string, PredictionRecord>> {
    if (xid === undefined) return new Map();
    const deadline = Date.now() + LOOKUP_WAIT_MS;
    for (;;) {
      const state = await transactionState(deps.db, xid);
      if (state === 'aborted') return new Map();
      if (state === 'committed') {
        // It wrote, so it made at least one: none visible yet means its COMMIT is still finishing.
        const made = await recordsById(deps.db, batch.map((entry) => entry.prediction.id));
        if (made.size > 0) return made;
      }
      if (Date.now() + LOOKUP_POLL_MS > deadline) throw new Error(`the transaction that made this create is ${state ?? 'unknown to the database'}`);
      await new Promise((resolve) => setTimeout(resolve, LOOKUP_POLL_MS));
    }
  }

  async function drain(): Promise<void> {
    try {
      while (waiting.length > 0) {
        await commit(waiting.splice(0, maxBatch));
      }
    } finally {
      committing = false;
    }
  }

  return {
    submit(userId, parsed, idempotency) {
      const id = randomUUID();
      const job: JobMessage = {
        id,
        userId,
        workflow: parsed.workflow,
        input: parsed.input,
        imageCount: parsed.imageCount,
        createdAt: new Date().toISOString(),
      };
      const prediction: NewPrediction = {
        id,
        userId,
        workflow: parsed.workflow,
        input: parsed.input,
        imageCount: parsed.imageCount,
        costCents: parsed.costCents,
        webhook: typeof parsed.input.webhook === 'string' ? parsed.input.webhook : null,
        job: { subject: subjects.job(catalogue[parsed.workflow].subjectToken), msgId: id, payload: job },
        idempotency,
      };
      return new Promise<Submitted>((resolve, reject) => {
        waiting.push({ prediction, resolve, reject });
        if (!committing) {
          committing = true;
          // Start the commit after the event loop has read every request that is already
          // waiting on a socket: PGlite runs on this thread, so starting at once would
          // commit each request alone before the next one is even parsed.
          setImmediate(() => void drain());
        }
      });
    },
  };
}
