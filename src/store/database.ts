import { DependencyUnavailableError } from '../util/unavailable.ts';

/**
 * One SQL surface for both back ends: node-postgres against a server when DATABASE_URL
 * is set, PGlite (Postgres compiled to WASM, in-process) otherwise. Both speak the same
 * dialect, so migrations and queries are written once.
 */
export interface QueryResult<Row> {
  rows: Row[];
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
}

export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
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

export interface DatabaseOptions {
  /** postgres://… — when absent the embedded PGlite database in dataDir is used. */
  databaseUrl?: string | undefined;
  limits?: PostgresLimits;
  /** Folder for PGlite's files; 'memory://' keeps it in memory (tests). */
  pgliteDir: string;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const db = options.databaseUrl
    ? await (await import('./postgres.ts')).openPostgres(options.databaseUrl, options.limits ?? DEFAULT_POSTGRES_LIMITS)
    : await (await import('./pglite.ts')).openPglite(options.pgliteDir);
  const { migrate } = await import('./migrations.ts');
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
  return db;
}

/**
 * openDatabase, waiting up to waitMs for a PostgreSQL server that cannot be reached yet (still
 * starting, failing over, restarting): a replica started meanwhile comes up with it instead of
 * exiting. Any other failure (bad credentials, a bad URL) is thrown at once.
 */
export async function openDatabaseWaiting(options: DatabaseOptions, waitMs: number, onWaiting: (error: DependencyUnavailableError) => void): Promise<Database> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await openDatabase(options);
    } catch (error) {
      if (!(error instanceof DependencyUnavailableError) || Date.now() >= deadline) throw error;
      onWaiting(error);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
