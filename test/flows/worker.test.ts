import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { CONSUMERS, STREAMS } from '../../src/queue/subjects.ts';
import { balanceOf } from '../../src/store/accounts.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

/** The real worker daemon (plain QR renderer) behind the API, and what happens when no worker finishes a job. */

const KEY = 'key-worker-0123456789abcdef0123456789a';

describe('with the real worker', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: true, env: { API_KEYS: `wes:${KEY}:100` } });
  });
  afterAll(async () => stack?.stop());

  const create = async (body: Record<string, unknown>) => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body });
    expect(created.status).toBe(200);
    return created.body.data as { id: string; credits: number; input: Record<string, unknown> };
  };
  const finished = (id: string) =>
    waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${id}`, { key: KEY });
      return got.body.data.status === 'executed' || got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 30_000);

  it('renders a v5 batch of 2 at 16:9 as 1024x576 PNGs that scan', async () => {
    const created = await create({ workflow: 'generate_qr_art_v5', prompt: 'a neon city', qrContent: 'https://example.com/v5', batchSize: 2, aspectRatio: '16:9' });
    expect(created.input).toMatchObject({ aspectRatio: '16:9', resolution: 'SD', batchSize: 2 });

    const done = await finished(created.id);
    expect(done.status).toBe('executed');
    expect(done.isScanables).toEqual([true, true]);
    expect(done.output.images).toHaveLength(2);
    expect(new Set(done.output.images).size).toBe(2);
    for (const url of done.output.images as string[]) {
      // Output URLs use PUBLIC_BASE_URL (http://localhost:PORT by default); fetch through the API's own address.
      const response = await fetch(`${stack.baseUrl}${new URL(url).pathname}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      const meta = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
      expect(meta).toMatchObject({ format: 'png', width: 1024, height: 576 });
    }
  });

  it('fails a qrImage workflow, which this worker cannot run, and refunds it', async () => {
    const before = await balanceOf(stack.api.db, 'wes');
    const created = await create({ workflow: 'generate_qr_art', qrText: 'a garden', qrImage: 'http://127.0.0.1/x.png' });
    expect(await balanceOf(stack.api.db, 'wes')).toBe(before - Math.round(created.credits * 100));

    const done = await finished(created.id);
    expect(done).toMatchObject({ status: 'failed', refunded: true, output: '' });
    expect(done.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    expect(done.completedAt).not.toBeNull();
    expect(await balanceOf(stack.api.db, 'wes')).toBe(before);
  });
});

describe('a job that no worker finishes', () => {
  let stack: TestStack;
  let rogue: Queue;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `wes:${KEY}:100`, JOB_MAX_DELIVER: '2', JOB_ACK_WAIT_MS: '1000' } });
    rogue = await connectQueue(stack.nats.url, 'test');
  });
  afterAll(async () => {
    await rogue?.close();
    await stack?.stop();
  });

  it('fails with worker_gave_up and a refund after MaxDeliver deliveries, and leaves the job stream', async () => {
    const before = await balanceOf(stack.api.db, 'wes');
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v4', qrText: 'a desert', qrContent: 'https://example.com/gave-up' },
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;

    // Play a worker that takes the job and dies: pull it, never ack; AckWait (1 s) hands it back.
    const consumer = await rogue.js.consumers.get(STREAMS.jobs, CONSUMERS.workers);
    const deliveries: number[] = [];
    for (let pulls = 0; deliveries.length < 2 && pulls < 10; pulls++) {
      const msg = await consumer.next({ expires: 3000 });
      if (!msg) continue;
      expect(JSON.parse(msg.string()).id).toBe(id);
      deliveries.push(msg.info.deliveryCount);
    }
    expect(deliveries).toEqual([1, 2]);
    // A worker keeps pulling; the server does not hand the job out a third time.
    expect(await consumer.next({ expires: 2500 })).toBeNull();

    const failed = await waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${id}`, { key: KEY });
      return got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 20_000);
    expect(failed).toMatchObject({ refunded: true, error: { code: 'worker_gave_up' } });
    expect(typeof failed.error.message).toBe('string');
    expect(await balanceOf(stack.api.db, 'wes')).toBe(before);

    await waitFor(async () => ((await rogue.jsm.streams.info(STREAMS.jobs)).state.messages === 0 ? true : undefined), 10_000);
    expect(await consumer.next({ expires: 1500 })).toBeNull();
  });
});
