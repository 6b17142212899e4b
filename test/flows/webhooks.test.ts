import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { answers, imageName, publishEvent, sleep, startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../helpers/flows.ts';
import { startTestStack, TEST_SECRET, waitFor, type TestStack } from '../helpers/service.ts';

/**
 * Webhooks (spec 6, design 7): one signed POST per status change, body = the get-prediction
 * response at that change, retried with the same webhook-id, resumed after an API restart.
 * The test plays the worker (status events) and the receiver (a local HTTP server).
 */

const KEY = 'key-hooks-0123456789abcdef0123456789ab';
const WORKER = 'test-worker';
/** Longest retry delay of the schedule below plus its +20 % jitter, plus slack. */
const QUIET_MS = 1500;

describe('webhook delivery', () => {
  let stack: TestStack;
  let worker: Queue;
  let receiver: WebhookReceiver;
  const verifier = new Webhook(TEST_SECRET);

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    stack = await startTestStack({ env: { API_KEYS: `hal:${KEY}:100`, WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800', WEBHOOK_TIMEOUT_MS: '5000' } });
    worker = await connectQueue(stack.nats.url, 'test');
  });
  afterAll(async () => {
    await worker?.close();
    await stack?.stop();
    await receiver?.close();
  });

  async function createWithWebhook(path: string): Promise<string> {
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v4s', qrText: 'a harbour at dusk', qrContent: 'https://example.com/hooks', webhook: `${receiver.url}${path}` },
    });
    expect(created.status).toBe(200);
    expect(created.body.data.input.webhook).toBe(`${receiver.url}${path}`);
    return created.body.data.id;
  }

  const executing = (id: string) => publishEvent(worker.js, { predictionId: id, status: 'executing', at: new Date().toISOString(), workerId: WORKER });

  const deliveries = (path: string, count: number) =>
    waitFor(async () => {
      const got = receiver.at(path);
      return got.length >= count ? got : undefined;
    });

  const get = async (id: string) => (await stack.call('GET', `/v1/predictions/${id}`, { key: KEY })).body;

  /** Checks the Standard Webhooks signature with the independent implementation; returns the parsed body. */
  const verified = (hook: ReceivedWebhook) => verifier.verify(hook.body, hook.headers);

  it('posts once per status change, signed, with the get-prediction response at that change as the body', async () => {
    const path = '/hooks/each-status';
    const id = await createWithWebhook(path);
    await sleep(300);
    expect(receiver.at(path)).toHaveLength(0); // creation (queued) is not announced

    await executing(id);
    const [first] = await deliveries(path, 1);
    const whileExecuting = await get(id);
    expect(whileExecuting.data.status).toBe('executing');
    expect(verified(first!)).toEqual(whileExecuting);
    expect(JSON.parse(first!.body)).toEqual(whileExecuting);
    expect(first!.headers['content-type']).toBe('application/json');

    const names = [imageName()];
    await publishEvent(worker.js, { predictionId: id, status: 'executed', at: new Date().toISOString(), workerId: WORKER, images: names, isScanables: [true] });
    const [, second] = await deliveries(path, 2);
    const done = await get(id);
    expect(done).toMatchObject({ success: true, data: { status: 'executed', isScanables: [true] } });
    expect(verified(second!)).toEqual(done);
    expect(JSON.parse(second!.body)).toEqual(done);
    expect(second!.headers['webhook-id']).not.toBe(first!.headers['webhook-id']);

    await sleep(QUIET_MS);
    expect(receiver.at(path)).toHaveLength(2);
  });

  it('retries a 5xx answer with the same webhook-id and body, and stops after the 2xx', async () => {
    const path = '/hooks/flaky';
    receiver.handle(path, answers(500, 500, 200));
    const id = await createWithWebhook(path);
    await executing(id);

    const attempts = await deliveries(path, 3);
    await sleep(QUIET_MS);
    expect(receiver.at(path)).toHaveLength(3);
    const ids = new Set(attempts.map((hook) => hook.headers['webhook-id']));
    expect(ids.size).toBe(1);
    expect(new Set(attempts.map((hook) => hook.body)).size).toBe(1);
    for (const hook of attempts) expect((verified(hook) as { data: { id: string } }).data.id).toBe(id);
    // The retries follow the schedule (200 ms, then 400 ms, each ±20 %), not a tight loop.
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(150);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(300);
  });

  it('gives up at once on a 410 answer', async () => {
    const path = '/hooks/gone';
    receiver.handle(path, answers(410));
    const id = await createWithWebhook(path);
    await executing(id);
    await deliveries(path, 1);
    await sleep(QUIET_MS);
    expect(receiver.at(path)).toHaveLength(1);
  });

  it('delivers a webhook that was waiting for a retry when the API restarted', async () => {
    const path = '/hooks/across-restart';
    let answerFirst!: (status: number) => void;
    const firstArrived = new Promise<void>((resolve) => {
      receiver.handle(path, (_request, response, attempt) => {
        if (attempt > 1) return void response.writeHead(200).end();
        answerFirst = (status) => response.writeHead(status).end();
        resolve();
      });
    });
    const id = await createWithWebhook(path);
    await executing(id);
    await firstArrived;

    // Stop the API while the first attempt is in hand: stop() closes the dispatcher's pull
    // first and then waits for that attempt, so the 503 below leaves the delivery nak'ed for
    // a retry that only the restarted API can pull.
    const oldApi = stack.api;
    const restarting = stack.restartApi();
    await sleep(500);
    const answeredAt = Date.now();
    answerFirst(503);
    await restarting;
    expect(stack.api).not.toBe(oldApi);

    const [first, retry] = await deliveries(path, 2);
    expect(oldApi.queue.nc.isClosed()).toBe(true);
    expect(retry!.at).toBeGreaterThan(answeredAt);
    expect(retry!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(retry!.body).toBe(first!.body);
    expect((verified(retry!) as { data: { id: string; status: string } }).data).toMatchObject({ id, status: 'executing' });

    await sleep(QUIET_MS);
    expect(receiver.at(path)).toHaveLength(2);
    expect((await get(id)).data.status).toBe('executing');
  });
});

describe('webhook URLs without ALLOW_PRIVATE_URLS', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `ivy:${KEY}:100`, ALLOW_PRIVATE_URLS: 'false' } });
  });
  afterAll(async () => stack?.stop());

  it('rejects a create whose webhook points at a loopback address with 400, charging nothing', async () => {
    for (const webhook of ['https://127.0.0.1/hook', 'https://localhost:8443/hook']) {
      const created = await stack.call('POST', '/v1/predictions/queue', {
        key: KEY,
        body: { workflow: 'generate_qr_art_v4s', qrText: 'a harbour', qrContent: 'https://example.com', webhook },
      });
      expect(created.status).toBe(400);
      expect(created.body.success).toBe(false);
      expect(created.body.error.details.map((detail: { field: string }) => detail.field)).toContain('webhook');
    }
    const list = await stack.call('GET', '/v1/predictions', { key: KEY });
    expect(list.body.data.totalDocs).toBe(0);
  });
});
