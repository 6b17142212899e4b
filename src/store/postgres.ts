import pg from 'pg';
import { CommitUnconfirmedError, DependencyUnavailableError } from '../util/unavailable.ts';
import type { Database, PostgresLimits, Queryable, QueryResult } from './database.ts';
import { isConnectionFailure } from './pg-errors.ts';

/** What a client should wait before retrying while the database is away. */
const RETRY_AFTER_SECONDS = 2;

/**
 * node-postgres behind our Database interface, hardened for a server that restarts, fails
 * over or stalls:
 * - every client has an 'error' listener for its whole life (pg-pool listens only while a
 *   client is idle; a connection reset during a transaction would otherwise be an unhandled
 *   'error' event and take the process down);
 * - connecting and waiting for a pooled client are bounded (connectTimeoutMs), and so is
 *   every statement, on the client (queryTimeoutMs: a paused server never answers) and on
 *   the server (statement_timeout, idle_in_transaction_session_timeout: it drops the work of
 *   a client that gave up);
 * - a client that saw a connection failure is destroyed, not returned to the pool, so the
 *   pool heals by itself once the server is back;
 * - such failures are thrown as DependencyUnavailableError (the API answers 503 with
 *   Retry-After), during a COMMIT as CommitUnconfirmedError (it may have committed); any
 *   other error (a bug of ours) is thrown as it is.
 */
export async function openPostgres(connectionString: string, limits: PostgresLimits): Promise<Database> {
  const pool = new pg.Pool({
    connectionString,
    max: limits.poolSize,
    connectionTimeoutMillis: limits.connectTimeoutMs,
    query_timeout: limits.queryTimeoutMs,
    statement_timeout: limits.queryTimeoutMs,
    idle_in_transaction_session_timeout: limits.queryTimeoutMs * 2,
    keepAlive: true,
  });
  // An idle client whose connection drops is emitted here; the pool discards it.
  pool.on('error', () => undefined);
  // Checked-out clients: the error also rejects the pending query, which is where we act on it.
  pool.on('connect', (client) => client.on('error', () => undefined));

  const unavailable = (error: unknown): never => {
    if (isConnectionFailure(error)) throw new DependencyUnavailableError('database', RETRY_AFTER_SECONDS, { cause: error });
    throw error;
  };

  const asQueryable = (target: pg.Pool | pg.PoolClient, timeoutMs?: number): Queryable => ({
    async query<Row>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<Row>> {
      const config: pg.QueryConfig = { text: sql, values: params as unknown[] };
      // The client's own bound, a little behind the server's so that the server's error is the one seen.
      if (timeoutMs !== undefined) (config as pg.QueryConfig & { query_timeout: number }).query_timeout = timeoutMs + 1000;
      const result = await target.query(config).catch(unavailable);
      return { rows: result.rows as Row[] };
    },
  });

  // Fail at start with the driver's message rather than on the first request (as
  // DependencyUnavailableError when the server is only unreachable: the caller may wait).
  const probe = await pool.connect().catch(async (error: unknown) => {
    await pool.end().catch(() => undefined);
    return unavailable(error);
  });
  probe.release();

  return {
    kind: 'postgres',
    ...asQueryable(pool),
    async transaction(fn, options = {}) {
      const client = await pool.connect().catch(unavailable);
      let broken: unknown;
      let committing = false;
      const timeoutMs = options.statementTimeoutMs;
      try {
        await client.query('BEGIN');
        if (timeoutMs !== undefined) await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
        const value = await fn(asQueryable(client, timeoutMs));
        committing = true;
        await client.query('COMMIT');
        return value;
      } catch (error) {
        if (committing && isConnectionFailure(error)) {
          // Sent, maybe committed: the caller must look before it says nothing was changed.
          broken = error;
          throw new CommitUnconfirmedError(RETRY_AFTER_SECONDS, { cause: error });
        }
        if (isConnectionFailure(error) || error instanceof DependencyUnavailableError) broken = error;
        // A broken connection cannot roll back; the server aborts the transaction when it sees the socket close.
        else await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
        return unavailable(error);
      } finally {
        // Passing an error destroys the client instead of pooling a connection in an unknown state.
        client.release(broken instanceof Error ? broken : broken === undefined ? undefined : new Error(String(broken)));
      }
    },
    exec: async (sql) => {
      await pool.query(sql).catch(unavailable);
    },
    connections: () => ({ inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => pool.end(),
  };
}
