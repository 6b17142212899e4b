import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { NSFW_ERROR } from '../../src/messages/schemas.ts';
import { balanceOf } from '../../src/store/accounts.ts';
import { eventsDrained, imageName, publishEvent, publishRawEvent, sleep, startWebhookReceiver } from '../helpers/flows.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

/**
 * The API applies worker status events (design 2): monotonic, idempotent, refunds once.
 * The test plays the worker by publishing StatusEvent messages itself.
 */

const KEY = 'key-events-0123456789abcdef0123456789';
const FILES = 'https://files.example.test';
/** Spec 7.1, verbatim. */
const SPEC_NSFW_ERROR = 'NSFW content detected. Try running it again, or try a different prompt. Credits are still deducted because GPU compute was used.';
const WORKER = 'test-worker';

describe('status events from workers', () => {
  let stack: TestStack;
  let worker: Queue;

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `erin:${KEY}:100`, PUBLIC_BASE_URL: FILES } });
    worker = await connectQueue(stack.nats.url, 'test');
  });
  afterAll(async () => {
    await worker?.close();
    await stack?.stop();
  });

  async function create(batchSize = 1) {
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v4', qrText: 'a lighthouse', qrContent: 'https://example.com/events', batchSize },
    });
    expect(created.status).toBe(200);
    return created.body.data as { id: string; credits: number; updatedAt: string; createdAt: string };
  }

  const get = async (id: string) => {
    const got = await stack.call('GET', `/v1/predictions/${id}`, { key: KEY });
    expect(got.status).toBe(200);
    return got.body.data;
  };

  const until = (id: string, status: string) =>
    waitFor(async () => {
      const record = await get(id);
      return record.status === status ? record : undefined;
    });

  const drained = () => waitFor(async () => ((await eventsDrained(stack.api.queue.jsm)) ? true : undefined));

  const ledger = async (id: string, reason: string) =>
    Number((await stack.api.db.query<{ n: string | number }>('SELECT count(*) AS n FROM credit_ledger WHERE prediction_id = $1 AND reason = $2', [id, reason])).rows[0]!.n);

  let executedId = '';

  it('executing then executed sets startedAt, completedAt and updatedAt, and builds output URLs from object names', async () => {
    const created = await create(2);

    const executingAt = new Date().toISOString();
    await publishEvent(worker.js, { predictionId: created.id, status: 'executing', at: executingAt, workerId: WORKER });
    const executing = await until(created.id, 'executing');
    expect(executing).toMatchObject({ startedAt: executingAt, completedAt: null, output: '', error: null, refunded: false });
    expect(Date.parse(executing.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));

    const names = [imageName(), imageName()];
    const executedAt = new Date(Date.now() + 5).toISOString();
    await publishEvent(worker.js, { predictionId: created.id, status: 'executed', at: executedAt, workerId: WORKER, images: names, isScanables: [true, false] });
    const executed = await until(created.id, 'executed');
    expect(executed).toMatchObject({
      startedAt: executingAt,
      completedAt: executedAt,
      output: { images: names.map((name) => `${FILES}/v1/files/${name}`) },
      isScanables: [true, false],
      error: null,
      refunded: false,
      createdAt: created.createdAt,
    });
    expect(Date.parse(executed.updatedAt)).toBeGreaterThanOrEqual(Date.parse(executing.updatedAt));
    expect(executed.updatedAt).not.toBe(created.updatedAt);
    executedId = created.id;
  });

  it('ignores a duplicate executed and an executing that arrives after executed', async () => {
    expect(executedId).not.toBe('');
    const before = await get(executedId);
    const later = new Date(Date.now() + 60_000).toISOString();
    await publishEvent(worker.js, { predictionId: executedId, status: 'executed', at: later, workerId: 'other', images: [imageName()], isScanables: [false] });
    await publishEvent(worker.js, { predictionId: executedId, status: 'executing', at: later, workerId: 'other' });
    await drained();
    expect(await get(executedId)).toEqual(before);
  });

  it('history does not depend on event order: executed (carrying its start) before executing keeps both times, and only the terminal webhook is sent', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const created = await stack.call('POST', '/v1/predictions/queue', {
        key: KEY,
        body: { workflow: 'generate_qr_art_v4', qrText: 'a lighthouse', qrContent: 'https://example.com/events', webhook: `${receiver.url}/late` },
      });
      expect(created.status).toBe(200);
      const id = created.body.data.id as string;
      const startedAt = new Date(Date.now() - 4000).toISOString();
      const completedAt = new Date().toISOString();
      await publishEvent(worker.js, { predictionId: id, status: 'executed', at: completedAt, startedAt, workerId: WORKER, images: [imageName()], isScanables: [true] });
      const executed = await until(id, 'executed');
      expect(executed).toMatchObject({ startedAt, completedAt });
      // The executing event that another replica held, applied last.
      await publishEvent(worker.js, { predictionId: id, status: 'executing', at: startedAt, workerId: WORKER });
      await drained();
      expect(await get(id)).toEqual(executed);
      await waitFor(async () => (receiver.at('/late').length > 0 ? true : undefined));
      await sleep(500);
      const hooks = receiver.at('/late').map((hook) => JSON.parse(hook.body).data);
      expect(hooks.map((hook) => hook.status)).toEqual(['executed']);
      expect(hooks[0]).toMatchObject({ startedAt, completedAt });
    } finally {
      await receiver.close();
    }
  });

  it('a late executing moves startedAt back to its own time when the terminal event carried no start (an older worker)', async () => {
    const { id } = await create();
    const startedAt = new Date(Date.now() - 3000).toISOString();
    const completedAt = new Date().toISOString();
    await publishEvent(worker.js, { predictionId: id, status: 'failed', at: completedAt, workerId: WORKER, error: { code: 'model_error', message: 'boom' } });
    const failed = await until(id, 'failed');
    expect(failed).toMatchObject({ startedAt: null, completedAt, refunded: true });
    await publishEvent(worker.js, { predictionId: id, status: 'executing', at: startedAt, workerId: WORKER });
    const corrected = await waitFor(async () => {
      const record = await get(id);
      return record.startedAt === startedAt ? record : undefined;
    });
    expect(corrected).toMatchObject({ status: 'failed', startedAt, completedAt, refunded: true });
    expect(await ledger(id, 'refund')).toBe(1);
  });

  it('an outpainting caption travels from the executed event into output, next to the image', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'outpainting', image: 'https://example.com/photo.png', image_width: 512, image_height: 512, padding_left: 64, padding_right: 0, padding_top: 0, padding_bottom: 0, type: 'one_shot' },
    });
    expect(created.status).toBe(200);
    const id = (created.body.data as { id: string }).id;
    const name = imageName();
    await publishEvent(worker.js, { predictionId: id, status: 'executed', at: new Date().toISOString(), workerId: WORKER, images: [name], isScanables: [false], caption: 'a blue abstract painting' });
    const executed = await until(id, 'executed');
    expect(executed.output).toEqual({ images: [`${FILES}/v1/files/${name}`], caption: 'a blue abstract painting' });
    expect(executed.input).not.toHaveProperty('prompt');
  });

  it('the scan robustness of each image travels from the executed event into output, in image order', async () => {
    const { id } = await create(2);
    const names = [imageName(), imageName()];
    await publishEvent(worker.js, { predictionId: id, status: 'executed', at: new Date().toISOString(), workerId: WORKER, images: names, isScanables: [true, false], scanRobustness: [1, 0.25] });
    const executed = await until(id, 'executed');
    expect(executed.output).toEqual({ images: names.map((name) => `${FILES}/v1/files/${name}`), scanRobustness: [1, 0.25] });
    expect(executed.isScanables).toEqual([true, false]);
  });

  it('a failure refunds the charge exactly once, even when the failed event arrives three times with different message ids', async () => {
    const balanceBefore = await balanceOf(stack.api.db, 'erin');
    const created = await create();
    expect(await balanceOf(stack.api.db, 'erin')).toBe(balanceBefore - Math.round(created.credits * 100));

    const error = { code: 'device_lost', message: 'the GPU went away' };
    const firstAt = new Date().toISOString();
    for (const [index, msgId] of ['fail-a', 'fail-b', 'fail-c'].entries()) {
      const at = new Date(Date.now() + index * 1000).toISOString();
      await publishEvent(worker.js, { predictionId: created.id, status: 'failed', at: index === 0 ? firstAt : at, workerId: WORKER, error }, `${created.id}-${msgId}`);
    }
    await drained();

    const failed = await get(created.id);
    expect(failed).toMatchObject({ status: 'failed', error, refunded: true, output: '', completedAt: firstAt });
    expect(await balanceOf(stack.api.db, 'erin')).toBe(balanceBefore);
    expect(await ledger(created.id, 'refund')).toBe(1);
    expect(await ledger(created.id, 'charge')).toBe(1);
  });

  it('worker text the database cannot hold (U+0000, an unpaired surrogate) is stored cleaned, not redelivered forever', async () => {
    const balanceBefore = await balanceOf(stack.api.db, 'erin');
    const created = await create();
    await publishEvent(worker.js, { predictionId: created.id, status: 'failed', at: new Date().toISOString(), workerId: `${WORKER}\u0000`, error: { code: 'fetch_failed', message: 'the server said \u0000"bad\ud800"' } });
    const failed = await until(created.id, 'failed');
    expect(failed.error).toEqual({ code: 'fetch_failed', message: 'the server said "bad\ufffd"' });
    expect(failed.refunded).toBe(true);
    expect(await balanceOf(stack.api.db, 'erin')).toBe(balanceBefore);

    const captioned = await create();
    const name = imageName();
    await publishEvent(worker.js, { predictionId: captioned.id, status: 'executed', at: new Date().toISOString(), workerId: WORKER, images: [name], isScanables: [false], caption: 'a \udc00 painting\u0000' });
    expect((await until(captioned.id, 'executed')).output.caption).toBe('a \ufffd painting');
  });

  it('an NSFW failure keeps the charge and reports the spec texts in output and error', async () => {
    const balanceBefore = await balanceOf(stack.api.db, 'erin');
    const created = await create();
    const charged = balanceBefore - Math.round(created.credits * 100);

    await publishEvent(worker.js, { predictionId: created.id, status: 'executing', at: new Date().toISOString(), workerId: WORKER });
    await publishEvent(worker.js, { predictionId: created.id, status: 'failed', at: new Date().toISOString(), workerId: WORKER, error: NSFW_ERROR, nsfw: true });
    const failed = await until(created.id, 'failed');
    expect(failed.output).toBe('NSFW contents detected!');
    expect(failed.error.message).toBe(SPEC_NSFW_ERROR);
    expect(typeof failed.error.code).toBe('string');
    expect(failed.refunded).toBe(false);
    expect(failed.startedAt).not.toBeNull();
    expect(failed.completedAt).not.toBeNull();

    await drained();
    expect(await balanceOf(stack.api.db, 'erin')).toBe(charged);
    expect(await ledger(created.id, 'refund')).toBe(0);
  });

  it('drops events for unknown predictions and malformed events without holding back later events', async () => {
    const created = await create();
    const unknown = randomUUID();
    await publishEvent(worker.js, { predictionId: unknown, status: 'executing', at: new Date().toISOString(), workerId: WORKER });
    await publishRawEvent(worker.js, created.id, 'this is not JSON');
    await publishRawEvent(worker.js, created.id, JSON.stringify({ predictionId: created.id, status: 'finished', at: new Date().toISOString(), workerId: WORKER }));
    // An object name that is not a random token (path traversal attempt) is refused by the schema.
    await publishRawEvent(
      worker.js,
      created.id,
      JSON.stringify({ predictionId: created.id, status: 'executed', at: new Date().toISOString(), workerId: WORKER, images: ['../../etc/passwd'], isScanables: [true] }),
    );
    await publishEvent(worker.js, { predictionId: created.id, status: 'executing', at: new Date().toISOString(), workerId: WORKER });

    const executing = await until(created.id, 'executing');
    expect(executing.output).toBe('');
    await drained();
    const { rows } = await stack.api.db.query('SELECT 1 FROM predictions WHERE id = $1', [unknown]);
    expect(rows).toHaveLength(0);
    expect((await get(created.id)).status).toBe('executing');
  });
});
