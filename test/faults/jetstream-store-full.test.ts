/**
 * A JetStream whose store is full answers every upload with 503 while the connection is up. The
 * worker tries a made result's delivery a few times, then hands the job back (bounded by
 * MaxDeliver, then failed and refunded), instead of holding it, heartbeated, for good.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { freePort, natsServerBinary } from '../../src/runtime/local-nats.ts';
import type { WorkerDaemon } from '../../src/worker/daemon.ts';
import { oneAtATimeDaemon } from '../helpers/daemon.ts';
import { waitFor } from '../helpers/service.ts';

describe('a JetStream store that is full', () => {
  let dir: string;
  let queue: Queue;
  let daemon: WorkerDaemon | undefined;
  let stopServer: () => void;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-nats-full-'));
    const port = await freePort();
    await writeFile(path.join(dir, 'nats.conf'), `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${path.join(dir, 'js')}", max_file_store: 4MB, max_memory_store: 1MB }\n`);
    const server = spawn(process.env.NATS_SERVER_BIN || natsServerBinary(), ['-c', path.join(dir, 'nats.conf')], { stdio: 'ignore' });
    stopServer = () => server.kill();
    queue = await waitFor(() => connectQueue(`nats://127.0.0.1:${port}`, 'store-full').catch(() => undefined), 10_000, 100);
    await ensureTopology(queue.jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3 });
  });
  afterAll(async () => {
    // The server first: a daemon still holding the job (the fault this guards against) must not keep it running.
    stopServer?.();
    await daemon?.stop();
    await queue?.nc.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('hands a job whose images cannot be stored back after a few tries, instead of holding it', async () => {
    let runs = 0;
    daemon = oneAtATimeDaemon(queue, {
      name: 'too-big',
      run: async () => {
        runs++;
        // Larger than the whole store.
        return { kind: 'images', images: [{ data: new Uint8Array(5 * 1024 * 1024).map((_, i) => (i * 7919) % 251), extension: 'png', isScannable: true }] };
      },
    });
    await queue.js.publish(
      subjects.job('generate_qr_art_v4'),
      JSON.stringify({ id: 'p-store-full', userId: 'u', workflow: 'generate_qr_art_v4', input: {}, imageCount: 1, createdAt: new Date().toISOString() }),
    );
    await waitFor(async () => (runs >= 2 ? true : undefined), 40_000, 100);
  }, 60_000);
});
