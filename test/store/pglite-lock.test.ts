import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from '../../src/store/pglite.ts';
import { DirInUseError } from '../../src/util/dir-lock.ts';

describe('the embedded database is one process at a time', () => {
  let dir: string;
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}.lock`, { recursive: true, force: true });
  });

  it('refuses a second open of its directory while the first is open (what `qr-art keys` meets while the service runs), and allows it after close', async () => {
    dir = path.join(await mkdtemp(path.join(tmpdir(), 'qrart-pglite-')), 'pglite');
    const first = await openPglite(dir);
    await first.exec('CREATE TABLE t (x int); INSERT INTO t VALUES (1)');
    const refused = await openPglite(dir).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(DirInUseError);
    expect((refused as Error).message).toContain(`${dir} is in use by another process (the embedded database, PGlite, allows one process at a time)`);
    // The refusals left the first one's lock and data alone.
    expect((await first.query<{ x: number }>('SELECT x FROM t')).rows).toEqual([{ x: 1 }]);
    await first.close();
    const second = await openPglite(dir);
    expect((await second.query<{ x: number }>('SELECT x FROM t')).rows).toEqual([{ x: 1 }]);
    await second.close();
  }, 60_000);
});
