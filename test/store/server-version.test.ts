/**
 * The server version check at start: the test database passes it; a server that says it is
 * PostgreSQL 12 (its answer rewritten over the real one: no such server here) is refused in one
 * line, before any migration, instead of every create failing later.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../src/store/database.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { refuseUnsupportedServer, UnsupportedServerError } from '../../src/store/server-version.ts';
import { testDatabaseUrl } from '../helpers/database.ts';

describe('the PostgreSQL version check', () => {
  let dir: string;
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-version-'));
    const database = await testDatabaseUrl();
    drop = database.drop;
    db = await openDatabase({ pgliteDir: dir, ...(database.url ? { databaseUrl: database.url } : {}) });
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
    await rm(dir, { recursive: true, force: true });
  });

  it('passes the server the tests run on', async () => {
    await expect(refuseUnsupportedServer(db)).resolves.toBeUndefined();
  });

  it('refuses PostgreSQL 12, naming its version and the one needed', async () => {
    const twelve = {
      query: async (sql: string, params?: readonly unknown[]) => {
        const result = await db.query(sql, params);
        return /server_version_num/.test(sql) ? { ...result, rows: [{ server_version: '12.11', server_version_num: '120011' }] } : result;
      },
    } as Queryable;
    const refused = refuseUnsupportedServer(twelve);
    await expect(refused).rejects.toThrow(UnsupportedServerError);
    await expect(refused).rejects.toThrow('PostgreSQL 12.11 is not supported: qr-art needs PostgreSQL 13 or later (it uses pg_current_xact_id and pg_xact_status)');
  });
});
