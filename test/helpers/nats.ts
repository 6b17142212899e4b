import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalNats, type LocalNats } from '../../src/runtime/local-nats.ts';

/** A real nats-server with JetStream for one test file, on free loopback ports. */
export async function startTestNats(): Promise<LocalNats & { storeDir: string; restart(): Promise<LocalNats> }> {
  const storeDir = await mkdtemp(path.join(tmpdir(), 'qrart-nats-'));
  const server = await startLocalNats(storeDir);
  return {
    ...server,
    storeDir,
    async stop() {
      await server.stop();
      await rm(storeDir, { recursive: true, force: true });
    },
    restart: () => startLocalNats(storeDir),
  };
}
