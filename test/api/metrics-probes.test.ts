import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerScrapeProbes } from '../../src/api/metrics-probes.ts';
import type { Queue } from '../../src/queue/connection.ts';
import type { Database } from '../../src/store/database.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { backend, testDatabaseUrl } from '../helpers/database.ts';
import { parseScrape } from '../helpers/prometheus.ts';

/**
 * The scrape-time gauges against dependencies that hang, fail, or answer: a scrape always
 * answers within the probe timeout, leaves out what it cannot know, and reads each dependency
 * once per scrape however many gauges it feeds. (test/flows/metrics.test.ts scrapes a real
 * stack, NATS down included.)
 */

type Behaviour = 'answer' | 'hang' | 'fail';

function fakes(behaviour: { db: Behaviour; nats: Behaviour; connected?: boolean }) {
  const calls = { db: 0, nats: 0 };
  const act = <T>(how: Behaviour, value: T): Promise<T> =>
    how === 'hang' ? new Promise<T>(() => undefined) : how === 'fail' ? Promise.reject(new Error('down')) : Promise.resolve(value);
  const db = {
    kind: 'postgres',
    query: () => (calls.db++, act(behaviour.db, { rows: [{ messages: '3', oldest_age: '12.5' }] })),
    connections: () => ({ inUse: 2, idle: 5, waiting: 1 }),
  } as unknown as Database;
  const queue = {
    connected: () => behaviour.connected ?? true,
    jsm: { consumers: { info: () => (calls.nats++, act(behaviour.nats, { num_pending: 4, num_ack_pending: 2 })) } },
  } as unknown as Queue;
  const registry = new Registry();
  registerScrapeProbes({ registry, db, queue, logger: pino({ level: 'silent' }), timeoutMs: 200 });
  return { registry, calls };
}

describe('scrape-time probes', () => {
  it('read what the database and the job and webhook consumers say, one read per dependency per scrape', async () => {
    const { registry, calls } = fakes({ db: 'answer', nats: 'answer' });
    const scraped = parseScrape(await registry.metrics());
    expect(scraped.value('qrart_outbox_messages')).toBe(3);
    expect(scraped.value('qrart_outbox_oldest_age_seconds')).toBe(12.5);
    expect(scraped.value('qrart_jobs_queue_depth')).toBe(6);
    expect(scraped.value('qrart_jobs_pending')).toBe(4);
    expect(scraped.value('qrart_jobs_ack_pending')).toBe(2);
    expect(scraped.value('qrart_webhook_retries_pending')).toBe(6);
    expect(scraped.value('qrart_db_pool_connections', { state: 'in_use' })).toBe(2);
    expect(scraped.value('qrart_db_pool_connections', { state: 'idle' })).toBe(5);
    expect(scraped.value('qrart_db_pool_connections', { state: 'waiting' })).toBe(1);
    // Two outbox gauges, one query; three job gauges and one webhook gauge, two consumer reads.
    expect(calls).toEqual({ db: 1, nats: 2 });
  });

  it(`count no connection as waiting on an idle database: the scrape's own outbox query is not a caller waiting (${backend})`, async () => {
    // node-postgres queues even a query an idle connection will take until its next tick: the
    // pool is read before the outbox probe sends one.
    const database = await testDatabaseUrl();
    const pgliteDir = await mkdtemp(path.join(tmpdir(), 'qrart-probes-'));
    const db = await openDatabase({ databaseUrl: database.url, pgliteDir });
    try {
      const queue = { connected: () => false } as unknown as Queue;
      const registry = new Registry();
      registerScrapeProbes({ registry, db, queue, logger: pino({ level: 'silent' }) });
      for (let scrape = 0; scrape < 3; scrape++) {
        const scraped = parseScrape(await registry.metrics());
        expect(scraped.value('qrart_outbox_messages')).toBe(0);
        expect(scraped.value('qrart_db_pool_connections', { state: 'waiting' }), `scrape ${scrape}`).toBe(0);
      }
    } finally {
      await db.close();
      await database.drop();
      await rm(pgliteDir, { recursive: true, force: true });
    }
  });

  it('answer within the timeout while the database and NATS hang, leaving their series out', async () => {
    const { registry } = fakes({ db: 'hang', nats: 'hang' });
    const t0 = performance.now();
    const scraped = parseScrape(await registry.metrics());
    expect(performance.now() - t0).toBeLessThan(1000);
    for (const name of ['qrart_outbox_messages', 'qrart_outbox_oldest_age_seconds', 'qrart_jobs_queue_depth', 'qrart_jobs_pending', 'qrart_jobs_ack_pending', 'qrart_webhook_retries_pending']) {
      expect(scraped.types.get(name), name).toBe('gauge');
      expect(scraped.value(name), name).toBeUndefined();
    }
    // The pool needs no I/O: still there.
    expect(scraped.value('qrart_db_pool_connections', { state: 'in_use' })).toBe(2);
  });

  it('leave out a failed read, skip NATS while disconnected, and report again once it answers', async () => {
    const behaviour: { db: Behaviour; nats: Behaviour } = { db: 'fail', nats: 'fail' };
    const failing = fakes(behaviour);
    const failed = parseScrape(await failing.registry.metrics());
    expect(failed.value('qrart_outbox_messages')).toBeUndefined();
    expect(failed.value('qrart_jobs_queue_depth')).toBeUndefined();
    Object.assign(behaviour, { db: 'answer', nats: 'answer' });
    const back = parseScrape(await failing.registry.metrics());
    expect(back.value('qrart_outbox_messages')).toBe(3);
    expect(back.value('qrart_jobs_queue_depth')).toBe(6);

    const disconnected = fakes({ db: 'answer', nats: 'answer', connected: false });
    const scraped = parseScrape(await disconnected.registry.metrics());
    expect(disconnected.calls.nats).toBe(0);
    expect(scraped.value('qrart_jobs_queue_depth')).toBeUndefined();
    expect(scraped.value('qrart_outbox_messages')).toBe(3);
  });
});
