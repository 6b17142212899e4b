import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addApiKey, authenticate, balanceOf, ensureUser, grantCredits, revokeApiKey, seedFromSpec } from '../../src/store/accounts.ts';
import type { Database } from '../../src/store/database.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { migrate } from '../../src/store/migrations.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { createPrediction, createPredictions, InsufficientCreditsError, listPredictions, type NewPrediction } from '../../src/store/predictions.ts';
import { backend, testDatabaseUrl } from '../helpers/database.ts';

/**
 * The database layer on its own: PGlite in memory, or a fresh database on the PostgreSQL
 * server named by TEST_DATABASE_URL.
 */

/** listPredictions' statement, for one user's first page. */
const LIST_SQL = `SELECT counted.total, page.* FROM
  (SELECT count(*) AS total FROM predictions WHERE user_id = 'user-0007') AS counted
  LEFT JOIN LATERAL (
    SELECT id, created_at FROM predictions WHERE user_id = 'user-0007' ORDER BY created_at DESC, id DESC LIMIT 10 OFFSET 0
  ) AS page ON true
  ORDER BY page.created_at DESC, page.id DESC`;

function newPrediction(userId: string, costCents: number): NewPrediction {
  const id = randomUUID();
  return {
    id,
    userId,
    workflow: 'generate_qr_art_v4s',
    input: { workflow: 'generate_qr_art_v4s', qrText: 'x', qrContent: 'y' },
    imageCount: 1,
    costCents,
    webhook: null,
    job: { subject: 'qrart.jobs.generate_qr_art_v4s', msgId: id, payload: { id } },
  };
}

const count = async (db: Database, sql: string, params: unknown[] = []) => Number((await db.query<{ n: string | number }>(sql, params)).rows[0]!.n);

async function plan(db: Database, options: { seqscan: boolean }): Promise<string> {
  return db.transaction(async (tx) => {
    if (!options.seqscan) await tx.query('SET LOCAL enable_seqscan = off');
    const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${LIST_SQL}`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

describe(`the store (${backend})`, () => {
  let database: Awaited<ReturnType<typeof testDatabaseUrl>>;
  let db: Database;
  let pgliteDir: string;

  beforeAll(async () => {
    database = await testDatabaseUrl();
    pgliteDir = await mkdtemp(path.join(tmpdir(), 'qrart-store-'));
    db = await openDatabase({ databaseUrl: database.url, pgliteDir });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
    await rm(pgliteDir, { recursive: true, force: true });
  });

  it('migrations are idempotent: reopening the database and migrating again changes nothing', async () => {
    const migrations = await count(db, 'SELECT count(*) AS n FROM schema_migrations');
    expect(migrations).toBeGreaterThan(0);
    await ensureUser(db, 'survivor');
    await migrate(db);
    if (db.kind === 'postgres') {
      // A second process against the same server while this one is open.
      const [second, third] = await Promise.all([
        openDatabase({ databaseUrl: database.url, pgliteDir }),
        openDatabase({ databaseUrl: database.url, pgliteDir }),
      ]);
      await second.close();
      await third.close();
    } else {
      // PGlite keeps one process per directory: close, then open the same files again.
      await db.close();
      db = await openDatabase({ databaseUrl: undefined, pgliteDir });
    }
    expect(await count(db, 'SELECT count(*) AS n FROM schema_migrations')).toBe(migrations);
    expect(await count(db, "SELECT count(*) AS n FROM users WHERE id = 'survivor'")).toBe(1);
  });

  it.skipIf(backend !== 'postgres')('several processes starting together on a fresh PostgreSQL database all migrate it', async () => {
    const fresh = await testDatabaseUrl();
    try {
      const opened = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ databaseUrl: fresh.url, pgliteDir })));
      expect(await count(opened[0]!, 'SELECT count(*) AS n FROM schema_migrations')).toBe(await count(db, 'SELECT count(*) AS n FROM schema_migrations'));
      await Promise.all(opened.map((each) => each.close()));
    } finally {
      await fresh.drop();
    }
  });

  it.skipIf(backend !== 'postgres')('survives PostgreSQL dropping its idle connections', async () => {
    // Two clients in the pool, so one can terminate the other while it sits idle.
    await Promise.all([db.query('SELECT pg_sleep(0.1)'), db.query('SELECT pg_sleep(0.1)')]);
    const { rows } = await db.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle'`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
  });

  it('a database made by the first version 1 (outbox.payload jsonb, foreign keys) is brought to the released schema', async () => {
    // That schema, made from today's: version 1 as it first ran, before 93d7a2c edited it.
    await db.exec(`
      ALTER TABLE outbox ALTER COLUMN payload TYPE jsonb USING payload::jsonb;
      ALTER TABLE predictions ADD CONSTRAINT predictions_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);
      ALTER TABLE credit_ledger ADD CONSTRAINT credit_ledger_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);
      ALTER TABLE credit_ledger ADD CONSTRAINT credit_ledger_prediction_id_fkey FOREIGN KEY (prediction_id) REFERENCES predictions(id);
      DELETE FROM schema_migrations WHERE version = 3;
    `);
    await ensureUser(db, 'upgraded');
    await grantCredits(db, 'upgraded', 500);
    await expect(createPrediction(db, newPrediction('upgraded', 100))).rejects.toThrow(/jsonb/);

    await migrate(db);
    const type = await db.query<{ data_type: string }>("SELECT data_type FROM information_schema.columns WHERE table_name = 'outbox' AND column_name = 'payload'");
    expect(type.rows[0]!.data_type).toBe('text');
    expect(await count(db, "SELECT count(*) AS n FROM information_schema.table_constraints WHERE constraint_type = 'FOREIGN KEY' AND table_name IN ('predictions', 'credit_ledger')")).toBe(0);
    const created = await createPrediction(db, newPrediction('upgraded', 100));
    expect(await count(db, 'SELECT count(*) AS n FROM outbox WHERE msg_id = $1', [created.id])).toBe(1);
  });

  // PGlite has no statement bound (and one connection: nothing to wait behind).
  it.skipIf(backend !== 'postgres')('a migration that takes longer than a request may (waiting behind a lock) is waited for, not cancelled at DB_QUERY_TIMEOUT_MS', async () => {
    const strict = await openPostgres(database.url!, { poolSize: 2, connectTimeoutMs: 2000, queryTimeoutMs: 300 });
    try {
      // Version 4 not yet applied (its index builds under a SHARE lock on predictions).
      await db.exec('DROP INDEX predictions_unfinished_age; DELETE FROM schema_migrations WHERE version = 4;');
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      // A writer holding predictions for 1.5 s, five times the request bound.
      const writer = db.transaction(async (tx) => {
        await tx.query('LOCK TABLE predictions IN ROW EXCLUSIVE MODE');
        locked();
        await tx.query('SELECT pg_sleep(1.5)');
      });
      await isLocked;
      await migrate(strict);
      await writer;
      expect(await count(db, "SELECT count(*) AS n FROM pg_indexes WHERE indexname = 'predictions_unfinished_age'")).toBe(1);
      expect(await count(db, 'SELECT count(*) AS n FROM schema_migrations WHERE version = 4')).toBe(1);
      // Requests keep their own bound.
      await expect(strict.query('SELECT pg_sleep(1)')).rejects.toThrow(/temporarily unavailable/);
    } finally {
      await strict.close();
    }
  });

  it('concurrent creates never take a balance below zero', async () => {
    await ensureUser(db, 'spender');
    await grantCredits(db, 'spender', 1000);
    const results = await Promise.allSettled(Array.from({ length: 14 }, () => createPrediction(db, newPrediction('spender', 100))));
    const accepted = results.filter((result) => result.status === 'fulfilled');
    const refused = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(4);
    for (const result of refused) expect(result.reason).toBeInstanceOf(InsufficientCreditsError);
    expect(await balanceOf(db, 'spender')).toBe(0);
    expect(await count(db, "SELECT count(*) AS n FROM predictions WHERE user_id = 'spender'")).toBe(10);
    expect(await count(db, "SELECT coalesce(sum(delta_cents), 0) AS n FROM credit_ledger WHERE user_id = 'spender'")).toBe(0);
    // Every accepted prediction has its job in the outbox, written in the same transaction.
    const ids = accepted.map((result) => (result as PromiseFulfilledResult<{ id: string }>).value.id);
    expect(await count(db, 'SELECT count(*) AS n FROM outbox WHERE msg_id = ANY($1::text[])', [ids])).toBe(10);
  });

  it('a batch of creates is accepted in order while the balance covers it', async () => {
    await ensureUser(db, 'batcher');
    await grantCredits(db, 'batcher', 1000);
    const batch = Array.from({ length: 5 }, () => newPrediction('batcher', 300));
    const { results, outbox } = await createPredictions(db, batch);
    expect(results.map((result) => result.ok)).toEqual([true, true, true, false, false]);
    expect(outbox.map((message) => message.msgId)).toEqual(batch.slice(0, 3).map((prediction) => prediction.id));
    expect(await balanceOf(db, 'batcher')).toBe(100);
  });

  it('in one batch a create refused for credits does not claim its Idempotency-Key: a later create with that key is judged as if alone', async () => {
    await ensureUser(db, 'keyed');
    await grantCredits(db, 'keyed', 300);
    const keyed = (costCents: number, requestHash: string): NewPrediction => ({ ...newPrediction('keyed', costCents), idempotency: { key: 'one-key', requestHash } });
    const tooDear = keyed(400, 'body-a');
    const again = keyed(400, 'body-a');
    const affordable = keyed(100, 'body-b');
    const repeat = keyed(100, 'body-b');
    const other = keyed(100, 'body-c');
    const { results } = await createPredictions(db, [tooDear, again, affordable, repeat, other]);
    expect(results.map((result) => (result.ok ? (result.replayed ? 'replayed' : 'created') : result.error.constructor.name))).toEqual([
      'InsufficientCreditsError',
      'InsufficientCreditsError',
      'created',
      'replayed',
      'IdempotencyKeyReusedError',
    ]);
    expect(results[3]!.ok && results[3]!.record.id).toBe(affordable.id);
    expect(await balanceOf(db, 'keyed')).toBe(200);
  });

  it('the balance CHECK refuses a negative balance whatever the caller', async () => {
    await ensureUser(db, 'checked');
    await expect(db.query("UPDATE users SET balance_cents = -1 WHERE id = 'checked'")).rejects.toThrow(/check/i);
    expect(await balanceOf(db, 'checked')).toBe(0);
  });

  it('the list query can use the predictions_user_newest index', async () => {
    await db.exec(`
      INSERT INTO users (id) SELECT 'user-' || lpad(g::text, 4, '0') FROM generate_series(1, 40) g ON CONFLICT DO NOTHING;
      INSERT INTO predictions (id, user_id, workflow, status, input, credits_cents, image_count, created_at)
        SELECT 'p-' || g, 'user-' || lpad((g % 40 + 1)::text, 4, '0'), 'generate_qr_art_v4s', 'queued', '{}'::jsonb, 100, 1,
               now() - g * interval '1 second'
          FROM generate_series(1, 4000) g;
      ANALYZE predictions;
    `);
    expect(await plan(db, { seqscan: false })).toContain('predictions_user_newest');
    const chosen = await plan(db, { seqscan: true });
    // PostgreSQL picks the index on its own; PGlite's planner may still prefer a scan.
    if (db.kind === 'postgres') expect(chosen).toContain('predictions_user_newest');
  });

  it("a list's page and its total come from one snapshot, however creates interleave", async () => {
    await ensureUser(db, 'lister');
    await grantCredits(db, 'lister', 1_000_000);
    let creating = true;
    const creates = (async () => {
      for (let n = 0; n < 60; n++) await createPrediction(db, newPrediction('lister', 1));
      creating = false;
    })();
    const mismatches: { docs: number; totalDocs: number }[] = [];
    let lists = 0;
    while (creating) {
      const { docs, totalDocs } = await listPredictions(db, 'lister', { limit: 100, offset: 0 });
      lists++;
      if (docs.length !== totalDocs) mismatches.push({ docs: docs.length, totalDocs });
    }
    await creates;
    expect(lists).toBeGreaterThan(10);
    expect(mismatches).toEqual([]);
    // Past the end: no docs, and still the total.
    expect(await listPredictions(db, 'lister', { limit: 10, offset: 60 })).toEqual({ docs: [], totalDocs: 60 });
  });

  it('stores API keys only as SHA-256 digests', async () => {
    const key = `qra_plaintext_${randomUUID()}`;
    await addApiKey(db, 'keyholder', key, 'test');
    const { rows } = await db.query('SELECT * FROM api_keys');
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(key);
    expect(dump).toContain(createHash('sha256').update(key).digest('hex'));
  });

  it('a revoked key no longer authenticates', async () => {
    const key = `qra_revoked_${randomUUID()}`;
    const { keyId } = await addApiKey(db, 'revokee', key);
    expect(await authenticate(db, key)).toEqual({ userId: 'revokee', keyId });
    await revokeApiKey(db, keyId);
    expect(await authenticate(db, key)).toBeNull();
    // Revoking twice keeps the first revocation time.
    const first = (await db.query<{ revoked_at: Date }>('SELECT revoked_at FROM api_keys WHERE id = $1', [keyId])).rows[0]!.revoked_at;
    await revokeApiKey(db, keyId);
    const second = (await db.query<{ revoked_at: Date }>('SELECT revoked_at FROM api_keys WHERE id = $1', [keyId])).rows[0]!.revoked_at;
    expect(new Date(second).toISOString()).toBe(new Date(first).toISOString());
  });

  it('seeding from API_KEYS twice does not grant the credits twice', async () => {
    const spec = [
      { userId: 'seeded', apiKey: `qra_seed_${randomUUID()}`, credits: 12.5 },
      { userId: 'seeded', apiKey: `qra_seed_${randomUUID()}`, credits: 1 },
    ];
    await seedFromSpec(db, spec);
    await seedFromSpec(db, spec);
    expect(await balanceOf(db, 'seeded')).toBe(1350);
    expect(await count(db, "SELECT count(*) AS n FROM api_keys WHERE user_id = 'seeded'")).toBe(2);
    expect(await count(db, "SELECT count(*) AS n FROM credit_ledger WHERE user_id = 'seeded' AND reason = 'grant'")).toBe(2);
  });

  it('seeding leaves a revoked key revoked and a key of another user with that user, and says so', async () => {
    const revokedKey = `qra_seed_${randomUUID()}`;
    const othersKey = `qra_seed_${randomUUID()}`;
    expect(
      await seedFromSpec(db, [
        { userId: 'seed-owner', apiKey: revokedKey, credits: 1 },
        { userId: 'seed-owner', apiKey: othersKey, credits: 1 },
      ]),
    ).toEqual([]);
    const revokedId = (await authenticate(db, revokedKey))!.keyId;
    const othersId = (await authenticate(db, othersKey))!.keyId;
    await revokeApiKey(db, revokedId);

    const conflicts = await seedFromSpec(db, [
      { userId: 'seed-owner', apiKey: revokedKey, credits: 5 },
      { userId: 'seed-newcomer', apiKey: othersKey, credits: 5 },
    ]);
    expect(conflicts).toEqual([
      { userId: 'seed-owner', keyId: revokedId, reason: 'key_revoked', owner: 'seed-owner' },
      { userId: 'seed-newcomer', keyId: othersId, reason: 'other_user', owner: 'seed-owner' },
    ]);
    expect(await authenticate(db, revokedKey)).toBeNull();
    expect((await authenticate(db, othersKey))!.userId).toBe('seed-owner');
    expect(await balanceOf(db, 'seed-owner')).toBe(200);
    expect(await count(db, "SELECT count(*) AS n FROM users WHERE id = 'seed-newcomer'")).toBe(0);
  });

  it.skipIf(backend !== 'postgres')('replicas starting at once with the same API_KEYS grant each new user once', async () => {
    // Each replica is a process with its own pool: four pools, racing on the same server, five times.
    const replicas = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ databaseUrl: database.url, pgliteDir })));
    try {
      for (let round = 0; round < 5; round++) {
        const spec = [
          { userId: `racer-${round}`, apiKey: `qra_race_${randomUUID()}`, credits: 100 },
          { userId: `racer-${round}-b`, apiKey: `qra_race_${randomUUID()}`, credits: 2.5 },
        ];
        await Promise.all(replicas.map((replica) => seedFromSpec(replica, spec)));
        expect(await balanceOf(db, `racer-${round}`)).toBe(10_000);
        expect(await balanceOf(db, `racer-${round}-b`)).toBe(250);
        expect(await count(db, `SELECT count(*) AS n FROM credit_ledger WHERE user_id LIKE 'racer-${round}%' AND reason = 'grant'`)).toBe(2);
        expect(await count(db, `SELECT count(*) AS n FROM api_keys WHERE user_id LIKE 'racer-${round}%'`)).toBe(2);
      }
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });
});
