/**
 * Opening the database: the back end DATABASE_URL picks (database.ts), migrated before use. Each
 * back end is imported only when chosen, so PGlite's WASM is not loaded beside a server.
 */
import { DependencyUnavailableError, waitWhileUnavailable } from '../util/unavailable.ts';
import { DEFAULT_POSTGRES_LIMITS, type Database, type PostgresLimits } from './database.ts';
import { migrate } from './migrations.ts';
import { refuseUnsupportedServer } from './server-version.ts';

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
  try {
    await refuseUnsupportedServer(db);
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
export function openDatabaseWaiting(options: DatabaseOptions, waitMs: number, onWaiting: (error: DependencyUnavailableError) => void): Promise<Database> {
  return waitWhileUnavailable(() => openDatabase(options), waitMs, onWaiting);
}
