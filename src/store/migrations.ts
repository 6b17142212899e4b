import type { Database } from './database.ts';

/**
 * Append-only: a released migration is never edited, a change is a new entry.
 * Money is kept in integer hundredths of a credit (cents) so 2.49 stays exact.
 */
const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'users, keys, credit ledger, predictions, outbox',
    sql: `
      CREATE TABLE users (
        id            text PRIMARY KEY,
        balance_cents bigint NOT NULL DEFAULT 0 CHECK (balance_cents >= 0),
        created_at    timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE api_keys (
        id         text PRIMARY KEY,
        user_id    text NOT NULL REFERENCES users(id),
        key_hash   text NOT NULL UNIQUE,
        label      text,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      );
      CREATE INDEX api_keys_user ON api_keys (user_id);

      -- predictions and credit_ledger carry no foreign keys: each FK is a per-row lookup on
      -- the hottest insert path, and every write to them is made by createPredictions and
      -- applyTransition, in transactions that read the rows they refer to.
      CREATE TABLE predictions (
        id            text PRIMARY KEY,
        user_id       text NOT NULL,
        workflow      text NOT NULL,
        status        text NOT NULL CHECK (status IN ('queued','executing','executed','failed')),
        input         jsonb NOT NULL,
        output        jsonb NOT NULL DEFAULT '""'::jsonb,
        error         jsonb,
        refunded      boolean NOT NULL DEFAULT false,
        credit_type   text NOT NULL DEFAULT 'API_CREDITS',
        credits_cents bigint NOT NULL CHECK (credits_cents >= 0),
        image_count   integer NOT NULL,
        is_scanables  jsonb,
        webhook       text,
        created_at    timestamptz NOT NULL DEFAULT now(),
        updated_at    timestamptz NOT NULL DEFAULT now(),
        started_at    timestamptz,
        completed_at  timestamptz
      );
      -- The list endpoint: one user's predictions, newest first.
      CREATE INDEX predictions_user_newest ON predictions (user_id, created_at DESC, id DESC);

      CREATE TABLE credit_ledger (
        id            bigserial PRIMARY KEY,
        user_id       text NOT NULL,
        delta_cents   bigint NOT NULL,
        reason        text NOT NULL CHECK (reason IN ('grant','charge','refund')),
        prediction_id text,
        created_at    timestamptz NOT NULL DEFAULT now()
      );
      -- A prediction is charged once and refunded at most once, whatever retries happen.
      CREATE UNIQUE INDEX credit_ledger_once ON credit_ledger (prediction_id, reason)
        WHERE prediction_id IS NOT NULL;
      CREATE INDEX credit_ledger_user ON credit_ledger (user_id, id);

      -- Transactional outbox: messages written with the change that causes them and
      -- published to JetStream afterwards, so a crash between commit and publish loses nothing.
      CREATE TABLE outbox (
        id         bigserial PRIMARY KEY,
        subject    text NOT NULL,
        msg_id     text NOT NULL,
        payload    text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 2,
    name: 'idempotency keys of creates',
    sql: `
      -- A client's Idempotency-Key on create, per user: which prediction it created and a
      -- digest of the request it came with. Kept for IDEMPOTENCY_KEY_TTL_HOURS.
      CREATE TABLE idempotency_keys (
        user_id       text NOT NULL,
        key           text NOT NULL,
        request_hash  text NOT NULL,
        prediction_id text NOT NULL,
        created_at    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, key)
      );
      CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
    `,
  },
  {
    version: 3,
    name: 'the first version 1 brought to the released one',
    sql: `
      -- Version 1 was edited after it first ran (93d7a2c, against the rule above): a database
      -- made before that has outbox.payload as jsonb, which the code's text writes fail on,
      -- and three foreign keys the hot insert path no longer pays for. On a database made
      -- since, each statement changes nothing (text to text is no rewrite).
      ALTER TABLE outbox ALTER COLUMN payload TYPE text USING payload::text;
      ALTER TABLE predictions DROP CONSTRAINT IF EXISTS predictions_user_id_fkey;
      ALTER TABLE credit_ledger DROP CONSTRAINT IF EXISTS credit_ledger_user_id_fkey;
      ALTER TABLE credit_ledger DROP CONSTRAINT IF EXISTS credit_ledger_prediction_id_fkey;
    `,
  },
  {
    version: 4,
    name: 'unfinished predictions by age, for their expiry',
    sql: `
      -- predictions/expiry.ts looks for predictions still queued or executing long after they
      -- last changed: few rows among many, so a partial index.
      CREATE INDEX predictions_unfinished_age ON predictions (updated_at) WHERE status IN ('queued', 'executing');
    `,
  },
];

/**
 * A migration's statements may take far longer than a request's (DB_QUERY_TIMEOUT_MS, 3 s by
 * default): an index built over a big predictions table, a wait behind another replica that is
 * migrating. Under the request bound such a migration would be cancelled at every start, and the
 * new version never come up, the database reported as unavailable.
 */
export const MIGRATION_STATEMENT_TIMEOUT_MS = 30 * 60_000;

export async function migrate(db: Database): Promise<void> {
  const bound = { statementTimeoutMs: MIGRATION_STATEMENT_TIMEOUT_MS };
  await db.transaction(async (tx) => {
    // Two replicas starting against a fresh server would otherwise collide inside
    // CREATE TABLE IF NOT EXISTS (duplicate pg_type row); the lock makes the second wait.
    await tx.query('SELECT pg_advisory_xact_lock(20240601)');
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  }, bound);
  const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((row) => Number(row.version)));
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    await db.transaction(async (tx) => {
      // Serialises concurrent starters against one server; the loser sees the row and skips.
      await tx.query('LOCK TABLE schema_migrations IN EXCLUSIVE MODE');
      const { rows: done } = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version]);
      if (done.length > 0) return;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
    }, bound);
  }
}

/** Migrations hold no semicolons inside literals or bodies, so splitting on ';' is exact. */
function splitStatements(sql: string): string[] {
  return sql
    .split(';')
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter((statement) => statement.length > 0);
}
