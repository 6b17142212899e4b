import { randomUUID } from 'node:crypto';
import type { Database } from '../store/database.ts';
import type { IdempotencyClaim } from '../store/idempotency.ts';
import { createPredictions, type CreateResult, type NewPrediction } from '../store/predictions.ts';
import { DependencyUnavailableError } from '../util/unavailable.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import { subjects } from '../queue/subjects.ts';
import type { JobMessage } from '../messages/schemas.ts';
import { catalogue } from '../workflows/catalogue.ts';
import type { ParsedPrediction } from '../workflows/validate.ts';
import { centsToCredits } from '../workflows/pricing.ts';

/** Where committed creates are counted (the API's metrics; declared here so this layer needs nothing above it). */
export interface CreationRecorder {
  predictionCreated(workflow: string, credits: number): void;
}

/** A create that went through: a new prediction, or the one its Idempotency-Key made before. */
export type Submitted = Extract<CreateResult, { ok: true }>;

export interface PredictionSubmitter {
  /**
   * Charges, records and queues one validated prediction; throws InsufficientCreditsError,
   * IdempotencyKeyReusedError, or DependencyUnavailableError (nothing was done).
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
    try {
      const { results, outbox } = await createPredictions(
        deps.db,
        batch.map((entry) => entry.prediction),
        deps.idempotencyTtlMs !== undefined ? { idempotencyTtlMs: deps.idempotencyTtlMs } : {},
      );
      deps.relay.publish(outbox);
      results.forEach((result, index) => {
        const { prediction } = batch[index]!;
        // Committed: counted once, a replay of an Idempotency-Key charged nothing.
        if (result.ok && !result.replayed) deps.metrics?.predictionCreated(prediction.workflow, centsToCredits(prediction.costCents));
        return result.ok ? batch[index]!.resolve(result) : batch[index]!.reject(result.error);
      });
    } catch (error) {
      // An outage fails every request alike; retrying them one by one would only wait longer.
      if (batch.length === 1 || error instanceof DependencyUnavailableError) {
        for (const entry of batch) entry.reject(error);
        return;
      }
      // One bad row must not fail the others: retry each on its own.
      for (const entry of batch) await commit([entry]);
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
