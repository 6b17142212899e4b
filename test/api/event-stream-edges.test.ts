/**
 * The event stream at its edges: a progress step whose `executing` event is never applied is
 * waited for once (not with a burst of reads every refresh), and a stream opened while the
 * server closes gets the record and its end instead of holding the shutdown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { subjects } from '../../src/queue/subjects.ts';
import { sleep } from '../helpers/flows.ts';
import { holdFirstPredictionRead, onPredictionReads } from '../helpers/database.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

const KEY = 'key-sse-edges-0123456789abcdef0123456789';
const BODY = { workflow: 'generate_qr_art_v4s', qrText: 'a lighthouse', qrContent: 'https://example.com/edges' };

describe('event stream edges', () => {
  let stack: TestStack;
  let worker: Queue;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `eddie:${KEY}:100` } });
    worker = await connectQueue(stack.nats.url, 'a-worker');
  });
  afterAll(async () => {
    await worker?.close();
    await stack?.stop();
  });

  const create = async () => (await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: BODY })).body.data.id as string;

  it('a step whose executing event never comes is waited for once, then the stream reads at its usual pace', async () => {
    const id = await create();
    let reads = 0;
    const restore = onPredictionReads(stack.api.db, id, () => void reads++);
    const controller = new AbortController();
    try {
      const response = await fetch(`${stack.baseUrl}/v1/predictions/${id}/events`, { headers: { 'x-api-key': KEY }, signal: controller.signal });
      expect(response.status).toBe(200);
      // A worker's step, with no executing event behind it (lost, or dropped as unreadable).
      worker.nc.publish(subjects.progress(id), JSON.stringify({ predictionId: id, step: 1, total: 12 }));
      // The wait for it: up to 25 reads over 5 s.
      await sleep(6000);
      const afterWait = reads;
      await sleep(6000);
      // Then a read every 5 s (one or two here), not another burst of up to 25.
      expect(reads - afterWait).toBeLessThanOrEqual(3);
    } finally {
      controller.abort();
      restore();
    }
  }, 30_000);

  it('a stream whose first read is under way when the server closes gets the record and its end; the close does not wait for it', async () => {
    const id = await create();
    const firstRead = holdFirstPredictionRead(stack.api.db, id, 300);
    try {
      const opened = fetch(`${stack.baseUrl}/v1/predictions/${id}/events`, { headers: { 'x-api-key': KEY } });
      await sleep(100);
      expect(firstRead.held()).toBe(true);
      const started = Date.now();
      const stopped = stack.api.stop().then(() => Date.now() - started);
      const response = await opened;
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toMatch(/^event: prediction\ndata: \{.*"status":"queued"/);
      // Well under the REQUEST_TIMEOUT_MS (30 s) that a stream left open held it for.
      expect(await stopped).toBeLessThan(10_000);
    } finally {
      firstRead.restore();
    }
  }, 60_000);
});
