/**
 * NATS comes back without its store (a server without a persistent volume, a store lost): its
 * streams, consumers and image bucket are gone. The API and the worker create them again after
 * the reconnect, so a prediction made then is published, run and delivered, not charged and left
 * queued until a process restarts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiService, type ApiService } from '../../src/runtime/api-service.ts';
import { freePort } from '../../src/runtime/local-nats.ts';
import { startWorkerService, type WorkerService } from '../../src/runtime/worker-service.ts';
import { testDatabaseUrl } from '../helpers/database.ts';
import { natsOnFixedPort } from '../helpers/nats.ts';
import { testConfig, waitFor } from '../helpers/service.ts';

const KEY = 'key-store-lost-0123456789abcdef01234567';

describe('NATS back without its store', () => {
  const dirs: string[] = [];
  let nats: ReturnType<typeof natsOnFixedPort>;
  let api: ApiService;
  let worker: WorkerService;
  let port: number;
  let release: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const [storeDir, dataDir] = [await mkdtemp(path.join(tmpdir(), 'qrart-nats-')), await mkdtemp(path.join(tmpdir(), 'qrart-data-'))];
    dirs.push(storeDir, dataDir);
    port = await freePort();
    nats = natsOnFixedPort(port, storeDir);
    await nats.start();
    const database = await testDatabaseUrl();
    release = database.drop;
    const config = testConfig(dataDir, database.url, { API_KEYS: `sol:${KEY}:100`, WORKER_PIPELINE: 'control-image' });
    const logger = pino({ level: config.LOG_LEVEL });
    worker = await startWorkerService({ config, natsUrl: nats.url, logger });
    api = await startApiService({ config, natsUrl: nats.url, logger });
  }, 60_000);
  afterAll(async () => {
    await api?.stop();
    await worker?.stop();
    await nats?.stop();
    await release?.();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const create = async () => {
    const response = await fetch(`${api.address}/v1/predictions/queue`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: 'https://example.com/store' }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { data: { id: string } }).data.id;
  };
  const statusOf = async (id: string) =>
    ((await (await fetch(`${api.address}/v1/predictions/${id}`, { headers: { 'x-api-key': KEY } })).json()) as { data: { status: string; output: { images?: string[] } } }).data;

  it('streams, consumers and the image bucket are made again: a prediction made after it is delivered', async () => {
    const before = await create();
    await waitFor(async () => ((await statusOf(before)).status === 'executed' ? true : undefined), 30_000);

    await nats.stop();
    const emptyStore = await mkdtemp(path.join(tmpdir(), 'qrart-nats-'));
    dirs.push(emptyStore);
    nats = natsOnFixedPort(port, emptyStore);
    await nats.start();

    const after = await create();
    const record = await waitFor(async () => {
      const now = await statusOf(after);
      return now.status === 'executed' ? now : undefined;
    }, 45_000);
    expect(record.output.images).toHaveLength(1);
    const image = await fetch(record.output.images![0]!);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
  }, 90_000);
});
