import { randomBytes } from 'node:crypto';
import pg from 'pg';

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
