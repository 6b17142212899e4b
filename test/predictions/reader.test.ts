import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPredictionReader } from '../../src/predictions/reader.ts';
import { ensureUser, grantCredits } from '../../src/store/accounts.ts';
import type { Database } from '../../src/store/database.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createPrediction } from '../../src/store/predictions.ts';

/**
 * The API's prediction reads: a change this process applied is seen at once, even by a read
 * whose query started before the change and comes back after it (a slow query on a pool).
 * PGlite, with the read's query held back by fault injection.
 */
describe('the prediction reader', () => {
  let dir: string;
  let db: Database;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-reader-'));
    db = await openDatabase({ pgliteDir: dir });
    await ensureUser(db, 'rhea');
    await grantCredits(db, 'rhea', 1000);
  });
  afterAll(async () => {
    await db?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a read that started before this process applied a change does not bring the old record back', async () => {
    const id = randomUUID();
    const queued = await createPrediction(db, { id, userId: 'rhea', workflow: 'generate_qr_art_v4s', input: { workflow: 'generate_qr_art_v4s' }, imageCount: 1, costCents: 100, webhook: null, job: { subject: 'qrart.jobs.x', msgId: id, payload: { id } } });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The same database, with its answers to reads held until released.
    const slow: Database = { ...db, query: async (sql, params) => {
      const result = await db.query(sql, params);
      await held;
      return result as never;
    } };
    const reader = createPredictionReader(slow, 60_000);

    const reading = reader.get('rhea', id);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the query has run; its answer waits
    const executing = { ...queued, status: 'executing' as const, startedAt: new Date(Date.parse(queued.updatedAt) + 1000).toISOString(), updatedAt: new Date(Date.parse(queued.updatedAt) + 1000).toISOString() };
    reader.remember(executing);
    release();

    expect((await reading)!.status).toBe('executing');
    expect((await reader.get('rhea', id))!.status).toBe('executing');
    expect(await reader.get('someone-else', id)).toBeNull();

    // A record a status further wins whatever its updatedAt says: a queued record's comes from
    // the API's clock, a transition's from the database's, and the two may disagree.
    const skewed = createPredictionReader(db, 60_000);
    skewed.remember({ ...queued, updatedAt: new Date(Date.parse(queued.updatedAt) + 60_000).toISOString() });
    skewed.remember(executing);
    expect((await skewed.get('rhea', id))!.status).toBe('executing');
  });
});
