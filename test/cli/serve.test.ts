/**
 * `qr-art serve` and `qr-art worker` started while NATS cannot be reached: each waits
 * NATS_STARTUP_WAIT_MS for it, then exits 1 with one line naming the server, not a stack trace
 * and not a process kept alive by what it had opened (the API's database).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { connect as connectTcp, createServer, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, natsServerBinary } from '../../src/runtime/local-nats.ts';
import { killWhenTestEnds, runCliToExit } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/qr-art.js', import.meta.url));

describe('serve and worker while NATS cannot be reached', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['serve', 'a port nothing listens on', 'connect ECONNREFUSED'],
    ['worker', 'a port nothing listens on', 'connect ECONNREFUSED'],
    // A name not in DNS yet (a compose service or a Kubernetes Service still starting).
    ['worker', 'a host name that does not resolve', 'getaddrinfo ENOTFOUND'],
  ])('%s, with NATS_URL at %s, waits, then exits 1 naming the server', async (command, where, reason) => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-serve-'));
    dirs.push(dataDir);
    const natsUrl = where === 'a port nothing listens on' ? `nats://127.0.0.1:${await freePort()}` : 'nats://nats-not-there.invalid:4222';
    const result = await runCliToExit([command], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        NATS_URL: natsUrl,
        NATS_STARTUP_WAIT_MS: '1500',
        PORT: '0',
        METRICS_PORT: 'off',
        WORKER_METRICS_PORT: 'off',
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
      },
      timeoutMs: 45_000,
    });
    expect(result.code, result.stderr).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(new RegExp(`^the broker is temporarily unavailable: cannot reach NATS at ${natsUrl}: ${reason}`));
    expect(result.stderr).not.toMatch(/\n\s+at /);
    // It waited (NATS_STARTUP_WAIT_MS), saying so, before giving up.
    expect(result.output).toMatch(/NATS not reachable yet; waiting/);
  }, 60_000);

  it('a NATS without JetStream (not enabled, no leader yet): each attempt closes its connection, so the process exits 1 when the wait ends', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-serve-'));
    dirs.push(dataDir);
    const port = await freePort();
    const server = spawn(process.env.NATS_SERVER_BIN || natsServerBinary(), ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    killWhenTestEnds(server);
    try {
      await new Promise<void>((resolve, reject) => {
        const deadline = Date.now() + 10_000;
        const knock = () => {
          const socket = connectTcp(port, '127.0.0.1', () => (socket.destroy(), resolve()));
          socket.on('error', () => (Date.now() > deadline ? reject(new Error('nats-server did not listen')) : setTimeout(knock, 100)));
        };
        knock();
      });
      const natsUrl = `nats://127.0.0.1:${port}`;
      const result = await runCliToExit(['worker'], {
        env: { ...process.env, DATA_DIR: dataDir, NATS_URL: natsUrl, NATS_STARTUP_WAIT_MS: '2500', WORKER_METRICS_PORT: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json' },
        timeoutMs: 30_000,
      });
      // Killed at the timeout (code null) while the connections of its attempts kept it alive.
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n').at(-1)).toMatch(new RegExp(`^the broker is temporarily unavailable: cannot reach NATS at ${natsUrl}: .*JS\\.API\\.INFO`));
    } finally {
      server.kill();
    }
  }, 60_000);

  it('a server that takes the connection and never answers is given up after one connect timeout (5 s), not the driver’s 20 s', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-serve-'));
    dirs.push(dataDir);
    // Accepts and stays silent, as a NATS behind something that swallows its replies looks; it hangs
    // up by itself after 15 s, or as soon as the worker has said why it stops.
    const sockets: Socket[] = [];
    const hangUp = () => sockets.splice(0).forEach((socket) => socket.destroy());
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const natsUrl = `nats://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const child = spawn(process.execPath, [BIN, 'worker'], {
      env: { ...process.env, DATA_DIR: dataDir, NATS_URL: natsUrl, NATS_STARTUP_WAIT_MS: '1000', WORKER_METRICS_PORT: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    killWhenTestEnds(child);
    let stderr = '';
    let saidBeforeHangUp = false;
    const fallback = setTimeout(hangUp, 15_000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (/cannot reach NATS/.test(stderr) && sockets.length > 0) ((saidBeforeHangUp = true), hangUp());
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(fallback);
    silent.close();
    expect(code, stderr).toBe(1);
    expect(stderr.trim().split('\n').at(-1)).toBe(`the broker is temporarily unavailable: cannot reach NATS at ${natsUrl}: timeout`);
    // nats.js leaves the socket of a connect that timed out open (transport-node 3.4 closes only
    // connected ones), so the process ends once the server hangs up; what matters is that it said
    // why while the server was still silent.
    expect(saidBeforeHangUp).toBe(true);
  }, 60_000);
});
