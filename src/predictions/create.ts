import { randomUUID } from 'node:crypto';
import type { Database } from '../store/database.ts';
import { createPrediction, type PredictionRecord } from '../store/predictions.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import { subjects } from '../queue/subjects.ts';
import type { JobMessage } from '../queue/schemas.ts';
import { catalogue } from '../workflows/catalogue.ts';
import type { ParsedPrediction } from '../workflows/validate.ts';

/**
 * Where a validated create request goes: charge, record and queue in one transaction
 * (store), then nudge the outbox relay so the job reaches JetStream right away.
 */
export async function submitPrediction(
  deps: { db: Database; relay: OutboxRelay },
  userId: string,
  parsed: ParsedPrediction,
): Promise<PredictionRecord> {
  const id = randomUUID();
  const job: JobMessage = {
    id,
    userId,
    workflow: parsed.workflow,
    input: parsed.input,
    imageCount: parsed.imageCount,
    createdAt: new Date().toISOString(),
  };
  const webhook = typeof parsed.input.webhook === 'string' ? parsed.input.webhook : null;
  const record = await createPrediction(deps.db, {
    id,
    userId,
    workflow: parsed.workflow,
    input: parsed.input,
    imageCount: parsed.imageCount,
    costCents: parsed.costCents,
    webhook,
    job: { subject: subjects.job(catalogue[parsed.workflow].subjectToken), msgId: id, payload: job },
  });
  deps.relay.kick();
  return record;
}
