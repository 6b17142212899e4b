import { connect } from 'node:net';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { subjects } from '../../src/queue/subjects.ts';
import { listAccounts, revokeApiKey } from '../../src/store/accounts.ts';
import { QrArtClient } from '../../src/client/index.ts';
import { imageName, publishEvent, sleep } from '../helpers/flows.ts';
import { holdFirstPredictionRead } from '../helpers/database.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

const KEY = 'key-sse-0123456789abcdef0123456789abcdef';
const OTHER = 'key-sse-other-0123456789abcdef012345678';
const REVOKED = 'key-sse-revoked-0123456789abcdef0123456';
const REVOKED_BUSY = 'key-sse-revoked-busy-0123456789abcdef01';
const CAPPED = 'key-sse-capped-0123456789abcdef01234567';

interface Streamed {
  status: number;
  events: EventSourceMessage[];
  /** The server closed the stream (it was not cut by the test). */
  ended: boolean;
}

/** Reads GET /v1/predictions/{id}/events as a browser's fetch would, until the server ends it or `until` says stop. */
async function stream(stack: TestStack, id: string, key: string | null, until?: (events: EventSourceMessage[]) => boolean): Promise<Streamed> {
  const controller = new AbortController();
  const response = await fetch(`${stack.baseUrl}/v1/predictions/${id}/events`, { headers: key ? { 'x-api-key': key } : {}, signal: controller.signal });
  const events: EventSourceMessage[] = [];
  if (response.status !== 200 || !response.body) return { status: response.status, events, ended: false };
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (until?.(events)) {
        controller.abort();
        break;
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  }
  return { status: 200, events, ended: !controller.signal.aborted };
}

const records = (events: EventSourceMessage[]) => events.filter((e) => e.event === 'prediction').map((e) => JSON.parse(e.data));
const progress = (events: EventSourceMessage[]) => events.filter((e) => e.event === 'progress').map((e) => JSON.parse(e.data) as { step: number; total: number });

describe('a prediction as server-sent events, through a worker on the demo graphs', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: true, env: { API_KEYS: `sse:${KEY}:100,other:${OTHER}:10` } });
  }, 120_000);
  afterAll(async () => stack?.stop());

  const create = async (over: Record<string, unknown> = {}) => {
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v5', prompt: 'a lighthouse', qrContent: 'https://example.com/sse', steps: 12, seed: 3, ...over },
    });
    expect(created.status).toBe(200);
    return created.body.data as { id: string };
  };

  it('streams the record, the steps as the worker takes them, and the final record, then ends', async () => {
    const { id } = await create({ batchSize: 2 });
    const streamed = await stream(stack, id, KEY);
    expect(streamed.ended).toBe(true);
    const seen = records(streamed.events);
    expect(seen[0]).toMatchObject({ id, status: expect.stringMatching(/^(queued|executing)$/) });
    expect(seen.at(-1)).toMatchObject({ id, status: 'executed', isScanables: [expect.any(Boolean), expect.any(Boolean)] });
    expect(seen.at(-1)).toEqual((await stack.call('GET', `/v1/predictions/${id}`, { key: KEY })).body.data);
    // Statuses only move forward, each once.
    const statuses = seen.map((r) => r.status);
    expect(statuses).toEqual([...new Set(statuses)]);
    const steps = progress(streamed.events);
    expect(steps.length).toBeGreaterThanOrEqual(2);
    expect(steps.map((s) => s.step)).toEqual([...steps.map((s) => s.step)].sort((a, b) => a - b));
    expect(new Set(steps.map((s) => s.total)).size).toBe(1);
    expect(steps.at(-1)!.step).toBe(steps.at(-1)!.total);
    // 12 steps, the batch denoised together (more with a refinement pass).
    expect(steps[0]!.total).toBeGreaterThanOrEqual(12);
    // Steps come after the record says executing (a client reads a step as "running"), and before the final record.
    const firstProgress = streamed.events.findIndex((e) => e.event === 'progress');
    const started = streamed.events.findIndex((e) => e.event === 'prediction' && JSON.parse(e.data).status !== 'queued');
    expect(started).toBeLessThan(firstProgress);
    const lastProgress = streamed.events.findLastIndex((e) => e.event === 'progress');
    const final = streamed.events.findIndex((e) => e.event === 'prediction' && JSON.parse(e.data).status === 'executed');
    expect(lastProgress).toBeLessThan(final);
  }, 120_000);

  it('gives a finished prediction as one event and ends', async () => {
    const { id } = await create();
    await waitFor(async () => ((await stack.call('GET', `/v1/predictions/${id}`, { key: KEY })).body.data.status === 'executed' ? true : undefined), 90_000);
    const streamed = await stream(stack, id, KEY);
    expect(streamed.ended).toBe(true);
    expect(streamed.events.map((e) => e.event)).toEqual(['prediction']);
    expect(records(streamed.events)[0].status).toBe('executed');
  }, 120_000);

  it('answers 401 without a key and 404 for another user or an unknown id, as GET does', async () => {
    const { id } = await create();
    expect((await stream(stack, id, null)).status).toBe(401);
    expect((await stream(stack, id, OTHER)).status).toBe(404);
    expect((await stream(stack, 'no-such-prediction', KEY)).status).toBe(404);
    const body = await (await fetch(`${stack.baseUrl}/v1/predictions/${id}/events`, { headers: { 'x-api-key': OTHER } })).json();
    expect(body).toMatchObject({ success: false, error: { code: 'not_found' } });
  }, 120_000);

  it('ends open streams when the API stops, so a shutdown never waits on a watcher', async () => {
    // A job the worker will not reach soon: the stream stays open on its first event.
    const { id } = await create({ steps: 40, batchSize: 4 });
    const pending = stream(stack, id, KEY);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const t0 = Date.now();
    await stack.restartApi();
    expect(Date.now() - t0).toBeLessThan(10_000);
    const streamed = await pending;
    expect(streamed.ended).toBe(true);
    expect(records(streamed.events).length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('does not let a stream the client aborted hold the shutdown (fetch leaves a spare connection that never sends a request)', async () => {
    const { id } = await create({ steps: 40, batchSize: 4 });
    const cut = await stream(stack, id, KEY, (events) => events.length >= 1);
    expect(cut.ended).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const t0 = Date.now();
    await stack.restartApi();
    // Node counts that connection as busy: without the shutdown grace it waits out the 72 s keep-alive.
    expect(Date.now() - t0).toBeLessThan(15_000);
  }, 120_000);
});

describe('server-sent events with the worker played by the test', () => {
  let stack: TestStack;
  let worker: Queue;
  beforeAll(async () => {
    stack = await startTestStack({
      env: { API_KEYS: `sse:${KEY}:100,revokee:${REVOKED}:100,busy:${REVOKED_BUSY}:100,capped:${CAPPED}:100`, API_KEY_CACHE_TTL_MS: '500', EVENT_STREAMS_PER_KEY: '2' },
    });
    worker = await connectQueue(stack.nats.url, 'sse-test-worker');
  });
  afterAll(async () => {
    await worker?.close();
    await stack?.stop();
  });

  it('a last step heard together with the final status is not sent after the final record', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'generate_qr_art_v4s', qrText: 'a kite', qrContent: 'https://example.com/kite' } });
    const id = created.body.data.id as string;
    const at = () => new Date().toISOString();
    const watching = stream(stack, id, KEY);
    await publishEvent(worker.js, { predictionId: id, status: 'executing', at: at(), workerId: 'w' });
    await sleep(500);
    // The last step and the result back to back, as a worker that finishes quickly sends them.
    worker.nc.publish(subjects.progress(id), JSON.stringify({ predictionId: id, step: 12, total: 12 }));
    await publishEvent(worker.js, { predictionId: id, status: 'executed', at: at(), workerId: 'w', images: [imageName()], isScanables: [true] });
    const streamed = await watching;
    expect(streamed.ended).toBe(true);
    expect(streamed.events.at(-1)!.event).toBe('prediction');
    expect(records(streamed.events).at(-1)!.status).toBe('executed');
  });

  /** Subscriptions the server holds on this prediction's subjects (nats-server's monitoring). */
  const watchersOf = async (id: string): Promise<string[]> => {
    const body = (await (await fetch(`${stack.nats.monitorUrl}/subsz?subs=1&limit=10000`)).json()) as { subscriptions_list?: { subject: string }[] };
    return (body.subscriptions_list ?? []).map((sub) => sub.subject).filter((subject) => subject.endsWith(id));
  };

  it('an open stream ends once its key is revoked, before the result, and opening it again is 401', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: REVOKED, body: { workflow: 'generate_qr_art_v4s', qrText: 'a lock', qrContent: 'https://example.com/lock' } });
    const id = created.body.data.id as string;
    const watching = stream(stack, id, REVOKED);
    await sleep(300);
    const [revokee] = (await listAccounts(stack.api.db)).filter((account) => account.userId === 'revokee');
    for (const key of revokee!.keys) await revokeApiKey(stack.api.db, key.keyId);
    const t0 = Date.now();
    const streamed = await Promise.race([watching, sleep(20_000).then(() => null)]);
    expect(streamed, 'the stream was still open 20 s after the revocation').not.toBeNull();
    // Within the key cache (0.5 s here) and a record read (every 5 s).
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(streamed!.ended).toBe(true);
    expect(records(streamed!.events).map((record) => record.status)).toEqual(['queued']);
    expect(await watchersOf(id)).toEqual([]);
    expect((await stream(stack, id, REVOKED)).status).toBe(401);
  }, 30_000);

  it('a stream whose steps keep coming still checks its key: it ends once the key is revoked', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: REVOKED_BUSY, body: { workflow: 'generate_qr_art_v4s', qrText: 'a mill', qrContent: 'https://example.com/mill' } });
    const id = created.body.data.id as string;
    const watching = stream(stack, id, REVOKED_BUSY);
    await publishEvent(worker.js, { predictionId: id, status: 'executing', at: new Date().toISOString(), workerId: 'w' });
    // A step every 250 ms, as a worker sends them through a long job.
    let step = 0;
    const stepper = setInterval(() => worker.nc.publish(subjects.progress(id), JSON.stringify({ predictionId: id, step: ++step, total: 1000 })), 250);
    try {
      await sleep(1000);
      const [busy] = (await listAccounts(stack.api.db)).filter((account) => account.userId === 'busy');
      for (const key of busy!.keys) await revokeApiKey(stack.api.db, key.keyId);
      const t0 = Date.now();
      const streamed = await Promise.race([watching, sleep(20_000).then(() => null)]);
      expect(streamed, 'the stream was still open 20 s after the revocation').not.toBeNull();
      expect(Date.now() - t0).toBeLessThan(8_000);
      expect(streamed!.ended).toBe(true);
    } finally {
      clearInterval(stepper);
    }
  }, 30_000);

  it('a client that leaves while the first record is read leaves nothing watching', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'generate_qr_art_v4s', qrText: 'a door', qrContent: 'https://example.com/door' } });
    const id = created.body.data.id as string;
    // The database stalls on the stream's first read (fault injection on this one statement).
    const firstRead = holdFirstPredictionRead(stack.api.db, id, 1000);
    try {
      const url = new URL(stack.baseUrl);
      const socket = connect(Number(url.port), url.hostname);
      socket.write(`GET /v1/predictions/${id}/events HTTP/1.1\r\nhost: ${url.host}\r\nx-api-key: ${KEY}\r\n\r\n`);
      await sleep(300);
      expect(firstRead.held()).toBe(true);
      socket.destroy();
      await sleep(1500);
    } finally {
      firstRead.restore();
    }
    expect(await watchersOf(id)).toEqual([]);
  }, 30_000);

  it('a key holds at most EVENT_STREAMS_PER_KEY streams: one more is 429 with Retry-After, and the client polls that one instead', async () => {
    const create = async (label: string) =>
      (await stack.call('POST', '/v1/predictions/queue', { key: CAPPED, body: { workflow: 'generate_qr_art_v4s', qrText: label, qrContent: `https://example.com/${label}` } })).body.data.id as string;
    const [a, b, c] = [await create('a'), await create('b'), await create('c')];
    // Refused opens (an unknown id) hold nothing.
    for (let i = 0; i < 3; i++) expect((await stream(stack, `no-such-${i}`, CAPPED)).status).toBe(404);
    const held = [a, b].map((id) => {
      const controller = new AbortController();
      const opened = fetch(`${stack.baseUrl}/v1/predictions/${id}/events`, { headers: { 'x-api-key': CAPPED }, signal: controller.signal });
      return { controller, opened };
    });
    for (const h of held) expect((await h.opened).status).toBe(200);
    const refused = await fetch(`${stack.baseUrl}/v1/predictions/${c}/events`, { headers: { 'x-api-key': CAPPED } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ success: false, error: { code: 'rate_limited', details: [{ field: 'x-api-key', rule: 'stream_limit' }] } });
    // Another key is not counted against this one.
    expect((await stream(stack, c, KEY)).status).toBe(404);

    // The client's wait falls back to polling for the third and still gets the result.
    const client = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: CAPPED });
    const waiting = client.wait(c, { pollIntervalMs: 50 });
    await sleep(300);
    const at = () => new Date().toISOString();
    await publishEvent(worker.js, { predictionId: c, status: 'executing', at: at(), workerId: 'w' });
    await publishEvent(worker.js, { predictionId: c, status: 'executed', at: at(), workerId: 'w', images: [imageName()], isScanables: [true] });
    expect(await waiting).toMatchObject({ id: c, status: 'executed' });

    // A stream that ends gives its place back.
    held[0]!.controller.abort();
    expect(await waitFor(async () => ((await streamStatus(c)) === 200 ? true : undefined), 5_000)).toBe(true);
    held[1]!.controller.abort();
  }, 30_000);

  /** Opens a stream only to see how it is answered. */
  const streamStatus = async (id: string): Promise<number> => {
    const controller = new AbortController();
    const response = await fetch(`${stack.baseUrl}/v1/predictions/${id}/events`, { headers: { 'x-api-key': CAPPED }, signal: controller.signal });
    controller.abort();
    return response.status;
  };
});
