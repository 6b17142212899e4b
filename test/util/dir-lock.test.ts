import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { DirInUseError, lockDir } from '../../src/util/dir-lock.ts';
import { killWhenTestEnds } from '../helpers/processes.ts';

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

  it('never takes over the lock of a holder that is alive but stopped (Ctrl-Z), however stale; once it is gone, it does', async () => {
    const dir = await newDir();
    const moduleUrl = new URL('../../src/util/dir-lock.ts', import.meta.url).href;
    const script = `${dir}-holder.mts`;
    dirs.push(script);
    await writeFile(script, `const { lockDir } = await import(${JSON.stringify(moduleUrl)});\nawait lockDir(${JSON.stringify(dir)}, { what: 'x', staleMs: ${STALE_MS} });\nconsole.log('locked');\nsetInterval(() => {}, 1000);\n`);
    // node itself (with tsx's loader), so that the pid signalled is the lock's holder.
    const holder = spawn(process.execPath, ['--import', 'tsx', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] });
    killWhenTestEnds(holder);
    await new Promise<void>((resolve) => holder.stdout.on('data', (chunk) => String(chunk).includes('locked') && resolve()));
    holder.kill('SIGSTOP');
    // Stopped, it refreshes nothing: its lock goes stale, but its owner is alive.
    await new Promise((resolve) => setTimeout(resolve, STALE_MS + 500));
    const second = lockDir(dir, { what: 'the test store', staleMs: STALE_MS });
    await expect(second).rejects.toThrow(DirInUseError);
    await expect(second).rejects.toThrow(`is in use by another process, pid ${holder.pid} (the test store allows one process at a time): stop the other qr-art first (if it is stopped, as Ctrl-Z leaves it, bring it back with fg or end it)`);
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const release = await lockDir(dir, { what: 'the test store', staleMs: STALE_MS });
    await release();
  }, 30_000);

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
