import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiService, type ApiService } from '../../src/runtime/api-service.ts';
import { freePort } from '../../src/runtime/local-nats.ts';
import { imageName, sleep } from '../helpers/flows.ts';
import { natsOnFixedPort } from '../helpers/nats.ts';
import { postgresBinDir, startPgServer, type PgServer } from '../helpers/pg-server.ts';
import { testConfig, waitFor } from '../helpers/service.ts';

/**
 * The API through its dependencies' outages, on a PostgreSQL server and a nats-server of
 * its own that the test stops, restarts and freezes. What must hold: the process never
 * exits, an outage answers 503 with Retry-After within a couple of seconds (never a 500,
 * never a hang), /readyz reports it (and stays 200: the outage is every replica's), service resumes by itself once the dependency is back,
 * and no create is charged twice, even one retried with its Idempotency-Key after a 503.
 */

const KEY = 'key-faults-0123456789abcdef0123456789';
const CREDITS = 100_000;
const CONNECT_TIMEOUT_MS = 1000;
const QUERY_TIMEOUT_MS = 1500;
/** The slowest an outage may be answered: acquiring a connection, then one statement, plus slack. */
const OUTAGE_ANSWER_MS = CONNECT_TIMEOUT_MS + QUERY_TIMEOUT_MS + 1500;

const body = (content = 'https://example.com/faults') => ({ workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: content });

describe.skipIf(!postgresBinDir())('the API through database and broker outages', () => {
  let database: PgServer;
  let nats: ReturnType<typeof natsOnFixedPort>;
  let api: ApiService;
  let storeDir: string;
  let dataDir: string;

  beforeAll(async () => {
    database = await startPgServer();
    storeDir = await mkdtemp(path.join(tmpdir(), 'qrart-nats-'));
    dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-data-'));
    nats = natsOnFixedPort(await freePort(), storeDir);
    await nats.start();
    const config = testConfig(dataDir, database.url, {
      API_KEYS: `fran:${KEY}:${CREDITS}`,
      DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      // Every read goes to the database, so an outage is seen by every kind of request.
      READ_CACHE_TTL_MS: '0',
      API_KEY_CACHE_TTL_MS: '0',
    });
    api = await startApiService({ config, natsUrl: nats.url, logger: pino({ level: config.LOG_LEVEL }) });
  }, 60_000);
  afterAll(async () => {
    await api?.stop();
    await nats?.stop();
    await database?.destroy();
    await rm(storeDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  async function call(method: string, urlPath: string, options: { body?: unknown; headers?: Record<string, string> } = {}) {
    const started = Date.now();
    const response = await fetch(`${api.address}${urlPath}`, {
      method,
      headers: { 'x-api-key': KEY, ...(options.body ? { 'content-type': 'application/json' } : {}), ...options.headers },
      body: options.body ? JSON.stringify(options.body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text, headers: response.headers, ms: Date.now() - started };
  }

  const expectOutageAnswer = (answer: Awaited<ReturnType<typeof call>>, dependency: string) => {
    expect(answer.status).toBe(503);
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(answer.body.error.code).toBe('service_unavailable');
    expect(answer.body.error.details).toEqual([{ field: '', rule: `${dependency}_available` }]);
  };

  /** Every prediction charged exactly once, and the balance is what the ledger says. */
  async function expectChargedOnce() {
    const { rows } = await api.db.query<{ predictions: string; charges: string; distinct_charged: string; spent: string; balance: string }>(
      `SELECT (SELECT count(*) FROM predictions) AS predictions,
              (SELECT count(*) FROM credit_ledger WHERE reason = 'charge') AS charges,
              (SELECT count(DISTINCT prediction_id) FROM credit_ledger WHERE reason = 'charge') AS distinct_charged,
              (SELECT coalesce(sum(credits_cents), 0) FROM predictions) AS spent,
              (SELECT balance_cents FROM users WHERE id = 'fran') AS balance`,
    );
    const totals = rows[0]!;
    expect(Number(totals.charges)).toBe(Number(totals.predictions));
    expect(Number(totals.distinct_charged)).toBe(Number(totals.predictions));
    expect(Number(totals.balance)).toBe(CREDITS * 100 - Number(totals.spent));
  }

  it('answers 503 with Retry-After within seconds while PostgreSQL is frozen, reports not ready, and serves again once it thaws', async () => {
    const created = await call('POST', '/v1/predictions/queue', { body: body() });
    expect(created.status).toBe(200);
    const idempotencyKey = randomUUID();
    const predictions = async () => Number((await api.db.query<{ n: string }>('SELECT count(*) AS n FROM predictions')).rows[0]!.n);
    const before = await predictions();

    database.pause();
    let answers: Awaited<ReturnType<typeof call>>[];
    let readiness: Awaited<ReturnType<typeof call>>;
    try {
      [answers, readiness] = await Promise.all([
        Promise.all([
          call('POST', '/v1/predictions/queue', { body: body('https://example.com/given-up'), headers: { 'idempotency-key': idempotencyKey } }),
          call('GET', `/v1/predictions/${created.body.data.id}`),
          call('GET', '/v1/predictions?limit=5'),
          ...Array.from({ length: 12 }, () => call('POST', '/v1/predictions/queue', { body: body() })),
        ]),
        call('GET', '/readyz'),
      ]);
    } finally {
      database.resume();
    }
    for (const answer of answers) {
      expectOutageAnswer(answer, 'database');
      expect(answer.ms).toBeLessThan(OUTAGE_ANSWER_MS);
    }
    // The outage is every replica's: /readyz reports it and stays 200, so a load balancer keeps
    // the replicas that answer 503 with Retry-After instead of answering for them.
    expect(readiness.status).toBe(200);
    expect(readiness.body.dependencies.database).toBe(false);

    // Back by itself; the client that got a 503 retries with its key and is charged once.
    await waitFor(async () => ((await call('GET', '/readyz')).body.dependencies?.database === true ? true : undefined), 15_000);
    const retried = await call('POST', '/v1/predictions/queue', { body: body('https://example.com/given-up'), headers: { 'idempotency-key': idempotencyKey } });
    expect(retried.status).toBe(200);
    const again = await call('POST', '/v1/predictions/queue', { body: body('https://example.com/given-up'), headers: { 'idempotency-key': idempotencyKey } });
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(retried.body.data.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // The creates answered 503 were rolled back when their connections were dropped, not committed when the server thawed.
    expect(await predictions()).toBe(before + 1);
    await expectChargedOnce();
  }, 60_000);

  it.each([
    ['immediate', 1],
    ['fast', 1],
    ['immediate', 3],
  ] as const)('stays up through %s PostgreSQL restarts (%i in a row) under load, answering 200 or 503 only, and serves again within seconds', async (mode, restarts) => {
    const statuses = new Map<number, number>();
    const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    let running = true;
    const load = Array.from({ length: 6 }, async () => {
      while (running) {
        const created = await call('POST', '/v1/predictions/queue', { body: body() });
        count(created.status);
        if (created.status === 200) count((await call('GET', `/v1/predictions/${created.body.data.id}`)).status);
        else await sleep(50);
      }
    });
    await sleep(1000);
    for (let restart = 0; restart < restarts; restart++) await database.restart(mode);
    const restarted = Date.now();
    await waitFor(async () => ((await call('POST', '/v1/predictions/queue', { body: body() })).status === 200 ? true : undefined), 15_000, 100);
    const recoveredMs = Date.now() - restarted;
    await sleep(500);
    running = false;
    await Promise.all(load);

    expect([...statuses.keys()].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(statuses.get(200)).toBeGreaterThan(10);
    expect(recoveredMs).toBeLessThan(10_000);
    await expectChargedOnce();
  }, 90_000);

  it('answers a write 503 with Retry-After while the server is read-only (a standby during failover), and a replica started then waits for it', async () => {
    /** As a failover's old primary turns standby: every new transaction read-only, for every session. */
    const readOnly = async (on: boolean) => {
      const admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      try {
        await admin.query('SET default_transaction_read_only = off');
        await admin.query(on ? 'ALTER SYSTEM SET default_transaction_read_only = on' : 'ALTER SYSTEM RESET default_transaction_read_only');
        await admin.query('SELECT pg_reload_conf()');
      } finally {
        await admin.end();
      }
    };
    const before = await call('POST', '/v1/predictions/queue', { body: body() });
    expect(before.status).toBe(200);
    await readOnly(true);
    let replica: ApiService | undefined;
    try {
      await waitFor(async () => (await call('POST', '/v1/predictions/queue', { body: body() })).status === 503 || undefined, 5000);
      expectOutageAnswer(await call('POST', '/v1/predictions/queue', { body: body() }), 'database');
      expect((await call('GET', `/v1/predictions/${before.body.data.id}`)).status).toBe(200); // reads still served

      const config = testConfig(dataDir, database.url, { DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS), DB_STARTUP_WAIT_MS: '30000' });
      const starting = startApiService({ config, natsUrl: nats.url, logger: pino({ level: config.LOG_LEVEL }) });
      let started = false;
      void starting.then(() => (started = true), () => undefined);
      await sleep(2500);
      expect(started).toBe(false); // migrating needs a writable server: it waits rather than exits
      await readOnly(false);
      replica = await starting;
      await waitFor(async () => (await call('POST', '/v1/predictions/queue', { body: body() })).status === 200 || undefined, 5000);
    } finally {
      await readOnly(false);
      await replica?.stop();
    }
    await expectChargedOnce();
  }, 60_000);

  it('an API replica started while PostgreSQL is down waits for it and comes up with it', async () => {
    await database.stop('fast');
    const config = testConfig(dataDir, database.url, { DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS), DB_STARTUP_WAIT_MS: '30000' });
    const starting = startApiService({ config, natsUrl: nats.url, logger: pino({ level: config.LOG_LEVEL }) });
    let started = false;
    void starting.then(() => (started = true), () => undefined);
    await sleep(2500);
    expect(started).toBe(false);
    await database.start();
    const replica = await starting;
    try {
      const readiness = await fetch(`${replica.address}/readyz`);
      expect(readiness.status).toBe(200);
      expect((await call('POST', '/v1/predictions/queue', { body: body() })).status).toBe(200);
    } finally {
      await replica.stop();
    }
  }, 60_000);

  it('an API replica started while NATS is down waits for it and comes up with it', async () => {
    await nats.stop();
    const config = testConfig(dataDir, database.url, { NATS_STARTUP_WAIT_MS: '30000' });
    const starting = startApiService({ config, natsUrl: nats.url, logger: pino({ level: config.LOG_LEVEL }) });
    let started = false;
    void starting.then(() => (started = true), () => undefined);
    try {
      await sleep(2500);
      expect(started).toBe(false);
    } finally {
      await nats.start();
    }
    const replica = await starting;
    try {
      expect((await fetch(`${replica.address}/readyz`)).status).toBe(200);
      expect((await call('POST', '/v1/predictions/queue', { body: body() })).status).toBe(200);
    } finally {
      await replica.stop();
    }
    // The replica under test reconnected too.
    await waitFor(async () => (api.queue.connected() ? true : undefined), 10_000);
  }, 60_000);

  it('stays up through a NATS restart under load: creates and reads go on, a file request is a 503 at once, and files are served again when NATS returns', async () => {
    const name = imageName();
    await api.queue.images.putBlob({ name }, new Uint8Array([137, 80, 78, 71]));
    expect((await call('GET', `/v1/files/${name}`)).status).toBe(200);

    const statuses = new Map<number, number>();
    let running = true;
    const load = Array.from({ length: 4 }, async () => {
      while (running) {
        const created = await call('POST', '/v1/predictions/queue', { body: body() });
        statuses.set(created.status, (statuses.get(created.status) ?? 0) + 1);
        if (created.status === 200) await call('GET', `/v1/predictions/${created.body.data.id}`);
      }
    });
    await nats.stop();
    try {
      await waitFor(async () => (api.queue.connected() ? undefined : true), 10_000);
      const file = await call('GET', `/v1/files/${name}`);
      expectOutageAnswer(file, 'broker');
      expect(file.ms).toBeLessThan(1000);
      const readiness = await call('GET', '/readyz');
      expect(readiness.status).toBe(200);
      expect(readiness.body.dependencies.nats).toBe(false);
      // Creates go through the outbox and need only the database.
      expect((await call('POST', '/v1/predictions/queue', { body: body() })).status).toBe(200);
    } finally {
      await nats.start();
    }
    await waitFor(async () => ((await call('GET', `/v1/files/${name}`)).status === 200 ? true : undefined), 20_000, 200);
    running = false;
    await Promise.all(load);
    // Creates need only the database: their jobs waited in the outbox.
    expect([...statuses.keys()]).toEqual([200]);
    await waitFor(async () => (Number((await api.db.query<{ n: string }>('SELECT count(*) AS n FROM outbox')).rows[0]!.n) === 0 ? true : undefined), 20_000, 200);
  }, 60_000);
});
