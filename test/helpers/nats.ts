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

/**
 * nats-server on a fixed port: stop() keeps the store, start() brings the same server back.
 * Clients reconnect to the URL they know, so a restart must reuse the port and the store.
 */
export function natsOnFixedPort(port: number, storeDir: string) {
  let server: LocalNats | null = null;
  return {
    url: `nats://127.0.0.1:${port}`,
    async start(): Promise<void> {
      server = await startLocalNats(storeDir, { port });
    },
    async stop(): Promise<void> {
      await server?.stop();
      server = null;
    },
  };
}
