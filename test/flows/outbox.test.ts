import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { STREAMS } from '../../src/queue/subjects.ts';
import { startApiService, type ApiService } from '../../src/runtime/api-service.ts';
import { freePort } from '../../src/runtime/local-nats.ts';
import { startWorkerService, type WorkerService } from '../../src/runtime/worker-service.ts';
import { testDatabaseUrl } from '../helpers/database.ts';
import { sleep } from '../helpers/flows.ts';
import { natsOnFixedPort } from '../helpers/nats.ts';
import { testConfig, waitFor } from '../helpers/service.ts';

/**
 * The transactional outbox (design 1-2): a create commits while NATS is down and its job
 * reaches the stream, and the worker, once NATS is back. NATS clients reconnect to the URL
 * they know, so the server is restarted on the same port with the same store directory.
 */

const KEY = 'key-outbox-0123456789abcdef0123456789';

describe('creates while NATS is down', () => {
  let nats: ReturnType<typeof natsOnFixedPort>;
  let api: ApiService;
  let worker: WorkerService;
  let database: Awaited<ReturnType<typeof testDatabaseUrl>>;
  let storeDir: string;
  let dataDir: string;

  beforeAll(async () => {
    storeDir = await mkdtemp(path.join(tmpdir(), 'qrart-nats-'));
    dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-data-'));
    nats = natsOnFixedPort(await freePort(), storeDir);
    await nats.start();
    database = await testDatabaseUrl();
    const config = testConfig(dataDir, database.url, { API_KEYS: `otto:${KEY}:100` });
    const logger = pino({ level: config.LOG_LEVEL });
    worker = await startWorkerService({ config, natsUrl: nats.url, logger });
    api = await startApiService({ config, natsUrl: nats.url, logger });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await nats?.stop();
    await database?.drop();
    await rm(storeDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  const call = async (method: string, urlPath: string, body?: unknown) => {
    const response = await fetch(`${api.address}${urlPath}`, {
      method,
      headers: { 'x-api-key': KEY, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const create = () => call('POST', '/v1/predictions/queue', { workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: 'https://example.com/outbox' });
  const executed = (id: string, timeoutMs: number) =>
    waitFor(async () => {
      const got = await call('GET', `/v1/predictions/${id}`);
      return got.body.data.status === 'executed' ? got.body.data : undefined;
    }, timeoutMs);
  const outboxRows = async () => Number((await api.db.query<{ n: string | number }>('SELECT count(*) AS n FROM outbox')).rows[0]!.n);

  it('accepts the create, keeps the job in the outbox, and runs it once NATS is back', async () => {
    // Everything is connected: a prediction goes through.
    const warmup = await create();
    expect(warmup.status).toBe(200);
    await executed(warmup.body.data.id, 15_000);

    await nats.stop();
    await waitFor(async () => {
      if (api.queue.nc.isClosed()) return undefined;
      const readiness = (await (await fetch(`${api.address}/readyz`)).json()) as { dependencies: { nats: boolean } };
      return readiness.dependencies.nats ? undefined : true;
    }, 10_000);

    const created = await create();
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ success: true, data: { status: 'queued', output: '', error: null } });
    const id = created.body.data.id as string;
    const { rows } = await api.db.query<{ msg_id: string }>('SELECT msg_id FROM outbox');
    expect(rows.map((row) => row.msg_id)).toContain(id);

    // Long enough for the relay's first publish to fail and the sweep to find the row.
    await sleep(1500);
    expect((await call('GET', `/v1/predictions/${id}`)).body.data.status).toBe('queued');

    await nats.start();
    const done = await executed(id, 30_000);
    expect(done.isScanables).toEqual([true]);
    await waitFor(async () => ((await outboxRows()) === 0 ? true : undefined), 10_000);
    // The job was stored once and consumed: nothing is left in the work queue.
    await waitFor(async () => ((await api.queue.jsm.streams.info(STREAMS.jobs)).state.messages === 0 ? true : undefined), 10_000);
    expect(api.queue.nc.isClosed()).toBe(false);
  });
});
