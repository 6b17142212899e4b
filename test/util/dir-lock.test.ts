import { mkdir, mkdtemp, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirInUseError, lockDir } from '../../src/util/dir-lock.ts';

const STALE_MS = 2000; // proper-lockfile's least

describe('lockDir', () => {
  const dirs: string[] = [];
  const newDir = async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'qrart-lock-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('refuses a second holder with DirInUseError naming the directory and what keeps its store there, after waiting', async () => {
    const dir = await newDir();
    const release = await lockDir(dir, { what: 'the test store', staleMs: STALE_MS });
    let waited = false;
    const started = Date.now();
    const second = lockDir(dir, { what: 'the test store', staleMs: STALE_MS, onWait: () => (waited = true) });
    await expect(second).rejects.toThrow(DirInUseError);
    await expect(second).rejects.toThrow(`${dir} is in use by another process (the test store allows one process at a time)`);
    expect(waited).toBe(true);
    // The holder refreshes its lock, so the wait runs out rather than taking it over.
    expect(Date.now() - started).toBeGreaterThanOrEqual(STALE_MS);
    await release();
  }, 20_000);

  it('is free again once released, and releasing twice is harmless (a store stopped twice)', async () => {
    const dir = await newDir();
    const release = await lockDir(dir, { what: 'the test store', staleMs: STALE_MS });
    await release();
    await release();
    const again = await lockDir(dir, { what: 'the test store', staleMs: STALE_MS });
    await again();
  });

  it('takes over a lock left by a process that was killed (not refreshed for longer than the stale time)', async () => {
    const dir = await newDir();
    // What a killed holder leaves: the lock directory, last refreshed a minute ago.
    await mkdir(`${dir}.lock`);
    const minuteAgo = new Date(Date.now() - 60_000);
    await utimes(`${dir}.lock`, minuteAgo, minuteAgo);
    dirs.push(`${dir}.lock`);
    const release = await lockDir(dir, { what: 'the test store', staleMs: STALE_MS });
    expect((await stat(`${dir}.lock`)).mtimeMs).toBeGreaterThan(minuteAgo.getTime());
    await release();
  });
});
