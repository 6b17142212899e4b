import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { lockDir } from '../util/dir-lock.ts';
import type { Database, Queryable, QueryResult } from './database.ts';

/** PGlite is one process's database: a second process opening the same directory is refused (DirInUseError). */
export async function openPglite(dir: string): Promise<Database> {
  let unlock = async () => {};
  if (!dir.startsWith('memory://')) {
    await mkdir(dir, { recursive: true });
    // PGlite's own failure on a folder it cannot write (left by a start as root, say) is an
    // Emscripten ErrnoError with no code or path: say which folder, as for the rest of DATA_DIR.
    await access(dir, constants.W_OK | constants.X_OK).catch((error: NodeJS.ErrnoException) => {
      throw Object.assign(new Error(`cannot write ${dir}`), { code: error.code ?? 'EACCES', path: dir });
    });
    unlock = await lockDir(dir, { what: 'the embedded database, PGlite,' });
  }
  let pg: PGlite;
  try {
    pg = await PGlite.create(dir);
  } catch (error) {
    await unlock();
    throw error;
  }

  const asQueryable = (target: Pick<PGlite, 'query'>): Queryable => ({
    async query<Row>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<Row>> {
      const result = await target.query<Row>(sql, params as unknown[]);
      return { rows: result.rows };
    },
  });

  return {
    kind: 'pglite',
    ...asQueryable(pg),
    // PGlite has one connection; its transaction() queues other callers until this one ends.
    transaction: (fn) => pg.transaction((tx) => fn(asQueryable(tx))),
    exec: async (sql) => {
      await pg.exec(sql);
    },
    // One connection, in this process, open for the database's whole life.
    connections: () => ({ inUse: 1, idle: 0, waiting: 0 }),
    close: async () => {
      await pg.close();
      await unlock();
    },
  };
}
