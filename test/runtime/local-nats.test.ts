/**
 * The one-machine NATS server (src/runtime/local-nats.ts): a port picked free can be taken by
 * another process before the server binds it (parallel tests start servers side by side); the
 * server is then started on ports picked again, and a port the caller gave is kept.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startLocalNats } from '../../src/runtime/local-nats.ts';

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
