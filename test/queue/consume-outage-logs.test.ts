/**
 * A consumer whose handler fails because a dependency is out (the event applier while PostgreSQL
 * restarts): every pending message is redelivered about once a second, and was logged at error
 * level each time (435 lines for 48 events over a 16 s outage in a reviewer's run). It is said
 * once, at warn, then with a count; a handler's own fault is still an error every time.
 */
import { AckPolicy } from '@nats-io/jetstream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { runConsumer } from '../../src/queue/consume.ts';
import { DependencyUnavailableError } from '../../src/util/unavailable.ts';
import { startTestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/service.ts';

describe('a consumer through a dependency outage', () => {
  let nats: Awaited<ReturnType<typeof startTestNats>>;
  let queue: Queue;
  beforeAll(async () => {
    nats = await startTestNats();
    queue = await connectQueue(nats.url, 'consume-outage-logs');
    await queue.jsm.streams.add({ name: 'OUTAGE_LOGS', subjects: ['outage.logs.>'] });
    await queue.jsm.consumers.add('OUTAGE_LOGS', { durable_name: 'applier', ack_policy: AckPolicy.Explicit });
  });
  afterAll(async () => {
    await queue?.close();
    await nats?.stop();
  });

  it('says the outage once at warn, not an error per redelivery, and that messages are handled again after it', async () => {
    const lines: { level: number; msg: string; failedSince?: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const outageEnds = Date.now() + 4000;
    const handled = new Set<string>();
    const running = runConsumer({
      js: queue.js,
      stream: 'OUTAGE_LOGS',
      consumer: 'applier',
      logger,
      concurrency: 8,
      handle: async (msg) => {
        if (Date.now() < outageEnds) throw new DependencyUnavailableError('database', 2);
        handled.add(msg.subject);
        msg.ack();
      },
    });
    try {
      for (let i = 0; i < 6; i++) await queue.js.publish(`outage.logs.${i}`, 'event');
      await waitFor(async () => (handled.size === 6 ? true : undefined), 20_000);
    } finally {
      await running.stop();
    }
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    const warned = lines.filter((line) => line.level === 40);
    expect(warned.map((line) => line.msg)).toEqual(['the database is unavailable: messages are redelivered until it is back']);
    const back = lines.filter((line) => line.msg === 'messages are handled again');
    expect(back).toHaveLength(1);
    // Six messages, each failing about once a second for 4 s.
    expect(back[0]!.failedSince).toBeGreaterThanOrEqual(6);
  }, 30_000);
});
