/**
 * One SQL surface for both back ends: node-postgres against a server when DATABASE_URL
 * is set, PGlite (Postgres compiled to WASM, in-process) otherwise. Both speak the same
 * dialect, so migrations and queries are written once. This file is the surface alone: the
 * back ends implement it and open-database.ts picks one, so neither imports the other's side.
 */
export interface QueryResult<Row> {
  rows: Row[];
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
}

export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs fn in one transaction: committed when it resolves, rolled back when it throws.
   * `statementTimeoutMs` replaces the per-statement bound (DB_QUERY_TIMEOUT_MS) inside it, on
   * the server and on the client: for the few statements that may rightly take long (a migration
   * building an index over a big table).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: { statementTimeoutMs?: number }): Promise<T>;
  /** Runs a script of several statements (migrations). */
  exec(sql: string): Promise<void>;
  /** The connections now, without I/O (the metrics read it at every scrape). */
  connections(): ConnectionCounts;
  close(): Promise<void>;
}

export interface ConnectionCounts {
  /** Checked out: running a query or a transaction. */
  inUse: number;
  idle: number;
  /** Callers waiting for a free connection (the pool is at DB_POOL_SIZE). */
  waiting: number;
}

/** Bounds on a PostgreSQL server's connection (config DB_*): a stalled server fails fast. */
export interface PostgresLimits {
  poolSize: number;
  /** Connecting, and waiting for a free pooled connection. */
  connectTimeoutMs: number;
  /** One statement, enforced by the client (a paused server) and by the server. */
  queryTimeoutMs: number;
}

export const DEFAULT_POSTGRES_LIMITS: PostgresLimits = { poolSize: 10, connectTimeoutMs: 2000, queryTimeoutMs: 3000 };
