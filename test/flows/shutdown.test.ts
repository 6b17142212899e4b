import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { runConsumer } from '../../src/queue/consume.ts';
import { CONSUMERS, STREAMS } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

/** A SIGTERM that comes right after start (a crash-looping pod, a quick deploy) must still end the process. */

const within = <T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> =>
  Promise.race([promise, new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), ms).unref())]);

describe('stopping right after starting', () => {
  let stack: TestStack;
  let queue: Queue;
  beforeAll(async () => {
    stack = await startTestStack();
    queue = await connectQueue(stack.nats.url, 'test');
    await ensureTopology(queue.jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3 });
  });
  afterAll(async () => {
    await queue?.close();
    await stack?.stop();
  });

  it('a consumer stopped before its pull is set up stops', async () => {
    for (const [stream, consumer] of [
      [STREAMS.events, CONSUMERS.eventApplier],
      [STREAMS.webhooks, CONSUMERS.webhookDispatcher],
    ] as const) {
      const running = runConsumer({ js: queue.js, stream, consumer, logger: pino({ level: 'silent' }), handle: async (msg) => msg.ack() });
      expect(await within(running.stop(), 5000)).toBeUndefined();
    }
  });

  it('an API service stopped as soon as it is listening stops, and a new one starts on the same data', async () => {
    const restarted = await stack.restartApi();
    expect(await within(restarted.stop(), 10_000)).toBeUndefined();
    const again = await stack.restartApi();
    expect((await fetch(`${again.address}/healthz`)).status).toBe(200);
  });
});
