/**
 * A NATS connection that goes silent, with no FIN or RST (the server's node lost, a network
 * partition): a worker must find out by its pings, well inside the jobs' AckWait, so that it
 * stops saying it is connected (readiness) and reconnects, instead of holding jobs whose
 * heartbeats go nowhere. A TCP proxy that stops forwarding stands in for the partition.
 */
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { freePort, startLocalNats, type LocalNats } from '../../src/runtime/local-nats.ts';

/** Forwards to `port` until frozen; then keeps every connection open and passes nothing either way. */
async function startFreezableProxy(port: number): Promise<{ url: string; freeze(): void; close(): void }> {
  let frozen = false;
  const sockets: net.Socket[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    sockets.push(client, upstream);
    client.on('data', (chunk) => frozen || upstream.write(chunk));
    upstream.on('data', (chunk) => frozen || client.write(chunk));
    for (const socket of [client, upstream]) socket.on('error', () => undefined);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const own = await freePort();
  await new Promise<void>((resolve) => server.listen(own, '127.0.0.1', resolve));
  return {
    url: `nats://127.0.0.1:${own}`,
    freeze: () => void (frozen = true),
    close: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

describe('a NATS connection that goes silent', () => {
  let dir: string;
  let nats: LocalNats;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-silent-'));
    nats = await startLocalNats(path.join(dir, 'nats'));
  });
  afterAll(async () => {
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('is found by missed pings: connected() turns false within two ping intervals', async () => {
    const proxy = await startFreezableProxy(Number(new URL(nats.url).port));
    let queue: Queue | undefined;
    try {
      queue = await connectQueue(proxy.url, 'silent-test', { pingIntervalMs: 500 });
      expect(queue.connected()).toBe(true);
      proxy.freeze();
      const frozenAt = Date.now();
      while (queue.connected() && Date.now() - frozenAt < 5000) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(queue.connected()).toBe(false);
      // Two missed pings and the third's interval, with room for a loaded machine.
      expect(Date.now() - frozenAt).toBeLessThan(4000);
    } finally {
      proxy.close();
      await queue?.nc.close();
    }
  });
});
