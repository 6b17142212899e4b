/**
 * The one-machine NATS server (src/runtime/local-nats.ts): a port picked free can be taken by
 * another process before the server binds it (parallel tests start servers side by side); the
 * server is then started on ports picked again, and a port the caller gave is kept. A server
 * left running by a process killed with SIGKILL is stopped by the next start on its store.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startLocalNats } from '../../src/runtime/local-nats.ts';
import { processesMentioning } from '../helpers/processes.ts';
import { waitFor } from '../helpers/service.ts';

const localNatsModule = path.resolve(import.meta.dirname, '../../src/runtime/local-nats.ts');

describe('startLocalNats when a picked port is taken before the server binds it', () => {
  let taken: Server;
  let takenPort: number;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-local-nats-'));
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    takenPort = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  it('picks its ports again and starts', async () => {
    // The first pick is the port another process holds (the race, made certain).
    let picks = 0;
    const pickPort = async () => (picks++ === 0 ? takenPort : freePort());
    const nats = await startLocalNats(path.join(dir, 'retry'), { pickPort });
    try {
      expect(picks).toBeGreaterThan(2);
      expect(nats.url).not.toContain(`:${takenPort}`);
      expect((await fetch(`${nats.monitorUrl}/varz`)).ok).toBe(true);
    } finally {
      await nats.stop();
    }
  });

  it('keeps a port the caller gave, and says why it cannot start', async () => {
    await expect(startLocalNats(path.join(dir, 'given'), { port: takenPort })).rejects.toThrow(/address already in use/);
  });
});

describe.skipIf(!existsSync('/usr/sbin/nats-server'))("startLocalNats for a user whose PATH leaves out /usr/sbin (where Debian's package puts it)", () => {
  it('finds /usr/sbin/nats-server and starts', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'qrart-local-nats-'));
    const saved = process.env.PATH;
    const savedBin = process.env.NATS_SERVER_BIN;
    process.env.PATH = '/usr/local/bin:/usr/bin:/bin';
    delete process.env.NATS_SERVER_BIN;
    try {
      const nats = await startLocalNats(path.join(dir, 'store'));
      try {
        expect((await fetch(`${nats.monitorUrl}/varz`)).ok).toBe(true);
      } finally {
        await nats.stop();
      }
    } finally {
      process.env.PATH = saved;
      if (savedBin !== undefined) process.env.NATS_SERVER_BIN = savedBin;
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('startLocalNats after the process that started a server on the store was killed', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-local-nats-'));
  });
  afterAll(async () => {
    // Whatever a failed run left behind.
    for (const pid of await processesMentioning(dir)) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('stops the server the killed process left running before it starts its own', async () => {
    const storeDir = path.join(dir, 'store');
    // A process that starts a server on the store, prints its monitor URL, and is then killed
    // with SIGKILL: no 'exit' handler runs, so its nats-server is left running on the store.
    const script = `
      const { startLocalNats } = await import(${JSON.stringify(pathToFileURL(localNatsModule).href)});
      const nats = await startLocalNats(${JSON.stringify(storeDir)});
      console.log(nats.monitorUrl);
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const leftMonitor = await new Promise<string>((resolve, reject) => {
      parent.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
      parent.once('exit', (code) => reject(new Error(`the starting process exited with ${code}`)));
    });
    const [leftPid] = await processesMentioning(`-sd ${storeDir}`);
    parent.kill('SIGKILL');
    await new Promise((resolve) => parent.once('exit', resolve));
    expect((await fetch(`${leftMonitor}/varz`)).ok).toBe(true); // orphaned, still serving the store
    expect(await processesMentioning(`-sd ${storeDir}`)).toEqual([leftPid]);

    const stopped: number[] = [];
    const nats = await startLocalNats(storeDir, { lockStaleMs: 2000, onLeftoverStopped: (pid) => stopped.push(pid) });
    try {
      expect(stopped).toEqual([leftPid]);
      expect(await fetch(`${leftMonitor}/varz`).then(() => 'serving', () => 'gone')).toBe('gone');
      // One server on the store: the new one.
      const serving = await processesMentioning(`-sd ${storeDir}`);
      expect(serving).toHaveLength(1);
      expect(serving).not.toContain(leftPid);
    } finally {
      await nats.stop();
    }
    // A clean stop leaves no pid for the next start to act on.
    expect(existsSync(path.join(storeDir, 'nats-server.pid'))).toBe(false);
  }, 30_000);
});

describe('a local nats-server killed by a signal (the OOM killer, kill -9)', () => {
  it('is stopped at once: stop() resolves instead of waiting for an exit that has happened', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'qrart-local-nats-'));
    try {
      const nats = await startLocalNats(path.join(dir, 'store'));
      const pid = Number(await readFile(path.join(dir, 'store', 'nats-server.pid'), 'utf8'));
      process.kill(pid, 'SIGKILL');
      await waitFor(async () => ((await fetch(`${nats.monitorUrl}/varz`).catch(() => null)) ? undefined : true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const stopped = await Promise.race([nats.stop().then(() => 'stopped'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5000))]);
      expect(stopped).toBe('stopped');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
