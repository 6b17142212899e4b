import pg from 'pg';
import type { Database, Queryable, QueryResult } from './database.ts';

export async function openPostgres(connectionString: string): Promise<Database> {
  const pool = new pg.Pool({ connectionString, max: 10 });
  // An idle client whose connection drops (server restart, failover) is emitted here; with no
  // listener that would crash the process. The pool discards it and the next query reconnects.
  pool.on('error', () => undefined);
  // Fail at start with the driver's message rather than on the first request.
  const probe = await pool.connect();
  probe.release();

  const asQueryable = (target: pg.Pool | pg.PoolClient): Queryable => ({
    async query<Row>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<Row>> {
      const result = await target.query(sql, params as unknown[]);
      return { rows: result.rows as Row[] };
    },
  });

  return {
    kind: 'postgres',
    ...asQueryable(pool),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const value = await fn(asQueryable(client));
        await client.query('COMMIT');
        return value;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    exec: async (sql) => {
      await pool.query(sql);
    },
    close: () => pool.end(),
  };
}
