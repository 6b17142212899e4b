/**
 * `qr-art serve` and `qr-art worker` started while NATS cannot be reached: each waits
 * NATS_STARTUP_WAIT_MS for it, then exits 1 with one line naming the server, not a stack trace
 * and not a process kept alive by what it had opened (the API's database).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/runtime/local-nats.ts';
import { runCliToExit } from '../helpers/processes.ts';

describe('serve and worker while NATS cannot be reached', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it.each(['serve', 'worker'])('%s waits, then exits 1 naming the server', async (command) => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-serve-'));
    dirs.push(dataDir);
    // A port nothing listens on.
    const natsUrl = `nats://127.0.0.1:${await freePort()}`;
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
    expect(lines.at(-1)).toMatch(new RegExp(`^the broker is temporarily unavailable: cannot reach NATS at ${natsUrl}: connect ECONNREFUSED`));
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
