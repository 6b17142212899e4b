import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../../src/store/database.ts';

/**
 * Tests use the embedded PGlite database unless TEST_DATABASE_URL points at a PostgreSQL
 * server (CI sets it): then each call creates a fresh, empty database on that server.
 */
export async function testDatabaseUrl(): Promise<{ url: string | undefined; drop(): Promise<void> }> {
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) return { url: undefined, drop: async () => undefined };
  const name = `qrart_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export const backend = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';

/**
 * Fault injection on the API's real database: `onRead` runs before each read of prediction `id`'s
 * record (the owner's read, as GET and the event stream do it), given how many came before; it may
 * count or hold the read. Returns the undo.
 */
export function onPredictionReads(db: Database, id: string, onRead: (before: number) => void | Promise<void>): () => void {
  const query = db.query.bind(db);
  let reads = 0;
  db.query = (async (sql: string, params?: readonly unknown[]) => {
    if (/FROM predictions WHERE id = \$1 AND user_id = \$2/.test(sql) && params?.[0] === id) await onRead(reads++);
    return query(sql, params);
  }) as typeof db.query;
  return () => void (db.query = query);
}

/** Holds the first read of prediction `id`'s record for `ms` (a database that stalls on it); `held()` says whether it came. */
export function holdFirstPredictionRead(db: Database, id: string, ms: number): { held(): boolean; restore(): void } {
  let held = false;
  const restore = onPredictionReads(db, id, async (before) => {
    if (before > 0) return;
    held = true;
    await new Promise((resolve) => setTimeout(resolve, ms));
  });
  return { held: () => held, restore };
}
