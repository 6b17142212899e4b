import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import type { WebhookDelivery } from '../../src/messages/schemas.ts';
import type { RunningConsumer } from '../../src/queue/consume.ts';
import { STREAMS, subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { startWebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { answers, sleep, startWebhookReceiver, type WebhookReceiver } from '../helpers/flows.ts';
import { startTestNats } from '../helpers/nats.ts';
import { TEST_SECRET, waitFor } from '../helpers/service.ts';

/**
 * One prediction's webhooks never go backwards at the receiver (docs/api.md, Webhooks), even
 * when its `executing` webhook is held back, by a retry or a late publish, until after the
 * terminal one was queued. The real dispatcher, a real nats-server, a local receiver.
 */

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

let sequence = 0;
function deliveries(url: string): { executing: WebhookDelivery; executed: WebhookDelivery } {
  const predictionId = `ord${String(++sequence).padStart(4, '0')}`;
  const of = (status: 'executing' | 'executed'): WebhookDelivery => ({
    deliveryId: `msg_${predictionId}_${status}`,
    predictionId,
    status,
    url,
    body: JSON.stringify({ success: true, data: { id: predictionId, status } }),
  });
  return { executing: of('executing'), executed: of('executed') };
}

/** The statuses in the order the receiver got them, with each answer's path. */
const arrivals = (receiver: WebhookReceiver, path: string): string[] => receiver.at(path).map((request) => JSON.parse(request.body).data.status as string);

describe('the order of one prediction\'s webhooks', () => {
  let nats: Awaited<ReturnType<typeof startTestNats>>;
  let queue: Queue;
  let receiver: WebhookReceiver;
  let dispatcher: RunningConsumer | null = null;

  const start = (scheduleMs: readonly number[]) => {
    dispatcher = startWebhookDispatcher({ queue, logger, secret: TEST_SECRET, scheduleMs, timeoutMs: 5000, allowPrivateUrls: true });
  };
  const enqueue = async (payload: WebhookDelivery) => {
    await queue.js.publish(subjects.webhook(payload.predictionId, payload.status), JSON.stringify(payload), { msgID: payload.deliveryId });
  };
  const streamEmpty = async () => ((await queue.jsm.streams.info(STREAMS.webhooks)).state.messages === 0 ? true : undefined);

  beforeAll(async () => {
    nats = await startTestNats();
    queue = await connectQueue(nats.url, 'webhook-order-test');
    await ensureTopology(queue.jsm, { jobAckWaitMs: 30_000, jobMaxDeliver: 3 });
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await dispatcher?.stop();
    dispatcher = null;
    await queue.jsm.streams.purge(STREAMS.webhooks);
  });
  afterAll(async () => {
    await receiver?.close();
    await queue?.close();
    await nats?.stop();
  });

  it('executing failed once and its retry is due later: the terminal webhook goes out, and the retry is dropped, not sent after it', async () => {
    receiver.handle('/retry-later', answers(503, 200));
    start([2000]);
    const { executing, executed } = deliveries(`${receiver.url}/retry-later`);
    await enqueue(executing);
    await waitFor(async () => (receiver.at('/retry-later').length === 1 ? true : undefined), 5000);
    await enqueue(executed);
    await waitFor(streamEmpty, 10_000);
    await sleep(2500); // past the retry's due time: it must not come
    expect(arrivals(receiver, '/retry-later')).toEqual(['executing', 'executed']);
  });

  it('executing failed once and its retry is due at once: the terminal webhook waits for it, then the retry is superseded', async () => {
    receiver.handle('/retry-soon', answers(503, 200));
    start([400]);
    const { executing, executed } = deliveries(`${receiver.url}/retry-soon`);
    await enqueue(executing);
    await waitFor(async () => (receiver.at('/retry-soon').length === 1 ? true : undefined), 5000);
    await enqueue(executed);
    await waitFor(streamEmpty, 10_000);
    await sleep(800);
    expect(arrivals(receiver, '/retry-soon')).toEqual(['executing', 'executed']);
  });

  it('executing queued while the terminal webhook is in flight (published late, after a broker hiccup): it is dropped, not sent after the end', async () => {
    receiver.handle('/late', (request, response) => {
      const { status } = JSON.parse(request.body).data as { status: string };
      setTimeout(() => response.writeHead(200).end(), status === 'executed' ? 400 : 0);
    });
    start([500]);
    const { executing, executed } = deliveries(`${receiver.url}/late`);
    await enqueue(executed);
    await waitFor(async () => (receiver.at('/late').length === 1 ? true : undefined), 5000);
    await enqueue(executing);
    await waitFor(streamEmpty, 10_000);
    await sleep(300);
    expect(arrivals(receiver, '/late')).toEqual(['executed']);
  });

  it('executing published after the terminal webhook went out (the outbox sweep, after a broker hiccup): the worker\'s terminal event drops it', async () => {
    start([500]);
    const { executing, executed } = deliveries(`${receiver.url}/swept`);
    // What the worker published, as the events stream keeps it.
    await queue.js.publish(subjects.event(executed.predictionId), JSON.stringify({ predictionId: executed.predictionId, status: 'executed', at: new Date().toISOString(), workerId: 'w', images: ['a'.repeat(16) + '.png'], isScanables: [true] }));
    await enqueue(executed);
    await waitFor(streamEmpty, 10_000);
    await enqueue(executing);
    await waitFor(streamEmpty, 10_000);
    await sleep(300);
    expect(arrivals(receiver, '/swept')).toEqual(['executed']);
  });
});
