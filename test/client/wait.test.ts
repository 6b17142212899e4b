/**
 * The client against the real stack with a diffusion worker on the demo models: create, wait
 * on the event stream with progress, download; the same wait by polling where the event
 * stream is missing (404, as on an older server) or cannot be reached; and the webhook of the
 * same prediction verified with verifyWebhook.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QrArtClient, verifyWebhook, type PredictionRecord, type PredictionStatus, type PredictionStreamEvent, type Progress } from '../../src/client/index.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/flows.ts';
import { TEST_SECRET, waitFor, type TestStack } from '../helpers/service.ts';
import { PNG_SIGNATURE, SMALL_V5S, startClientStack } from './stack.ts';

const KEY = 'key-client-wait-0123456789abcdef01234';

/** A fetch that sends the event-stream requests to `events` and everything else on. */
function withEventsFetch(events: (url: string, init?: RequestInit) => Promise<Response>): { fetch: typeof fetch; tried: string[] } {
  const tried: string[] = [];
  return {
    tried,
    fetch: async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (!/\/events$/.test(new URL(url).pathname)) return fetch(input, init);
      tried.push(url);
      return events(url, init);
    },
  };
}

describe('QrArtClient.wait with a worker', () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let client: QrArtClient;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    stack = await startClientStack({ worker: true, env: { API_KEYS: `cleo:${KEY}:100` } });
    client = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: KEY });
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
  });

  it('follows the event stream: statuses in order, progress steps rising to the total, then the executed record; the images download as PNG', async () => {
    const created = await client.create({ ...SMALL_V5S, seed: 7, webhook: `${receiver.url}/hooks/wait` });
    expect(created).toMatchObject({ status: 'queued', credits: 1.49, input: { workflow: 'generate_qr_art_v5s', steps: 4, seed: 7 } });

    const statuses: PredictionStatus[] = [];
    const progress: Progress[] = [];
    const done = await client.wait(created.id, { onStatus: (record) => statuses.push(record.status), onProgress: (p) => progress.push(p) });

    expect(done).toMatchObject({ id: created.id, status: 'executed', error: null, isScanables: [expect.any(Boolean)] });
    expect(done).toEqual(await client.get(created.id));
    expect(statuses.at(-1)).toBe('executed');
    expect(statuses).toEqual([...statuses].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b)));

    expect(progress.length).toBeGreaterThan(0);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.step).toBeGreaterThan(progress[i - 1]!.step);
    const last = progress.at(-1)!;
    expect(last.step).toBe(last.total);
    expect(last.total).toBeGreaterThanOrEqual(4);

    // The raw stream of a finished prediction: its final record, then the end.
    const replay: PredictionStreamEvent[] = [];
    for await (const event of client.events(created.id)) replay.push(event);
    expect(replay).toEqual([{ type: 'prediction', record: done }]);

    const images = (done.output as { images: string[] }).images;
    expect(images).toHaveLength(1);
    const bytes = await client.download(images[0]!);
    expect([...bytes.subarray(0, 8)]).toEqual(PNG_SIGNATURE);
    expect(await sharp(bytes).metadata()).toMatchObject({ format: 'png', width: 768, height: 768 });

    // The same prediction's webhooks, checked by the client's verifier: the final one is the record as GET returns it.
    const hooks = await waitFor(async () => {
      const got = receiver.at('/hooks/wait');
      return got.some((hook) => JSON.parse(hook.body).data.status === 'executed') ? got : undefined;
    });
    const events = hooks.map((hook) => verifyWebhook(hook.body, hook.headers, TEST_SECRET));
    expect(events.at(-1)).toEqual({ success: true, data: done });
  });

  it('polls GET when the event route answers 404 (an older server) and when it cannot be reached; both end with the executed record', async () => {
    const olderServer = withEventsFetch(async () => Response.json({ success: false, error: { code: 'not_found', message: 'route not found', details: [] } }, { status: 404 }));
    const unreachable = withEventsFetch(async () => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
    });
    const polling404 = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: KEY, fetch: olderServer.fetch });
    const pollingDown = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: KEY, fetch: unreachable.fetch });

    const created = await polling404.create({ ...SMALL_V5S, seed: 8 });
    const seen = { a: [] as PredictionStatus[], b: [] as PredictionStatus[] };
    const progress: Progress[] = [];
    const [a, b] = await Promise.all([
      polling404.wait(created.id, { pollIntervalMs: 50, onStatus: (r) => seen.a.push(r.status), onProgress: (p) => progress.push(p) }),
      pollingDown.wait(created.id, { pollIntervalMs: 50, onStatus: (r) => seen.b.push(r.status) }),
    ]);
    for (const done of [a, b] as PredictionRecord[]) expect(done).toMatchObject({ id: created.id, status: 'executed', isScanables: [expect.any(Boolean)] });
    expect(seen.a.at(-1)).toBe('executed');
    expect(seen.b.at(-1)).toBe('executed');
    // Polled every 50 ms through a job of some seconds: the executing status was seen on the way.
    expect(seen.a).toContain('executing');
    expect(progress).toEqual([]); // only the stream reports steps
    // The missing route was asked once; the unreachable one a few times before polling for good.
    expect(olderServer.tried).toHaveLength(1);
    expect(unreachable.tried.length).toBeGreaterThanOrEqual(1);
    expect(unreachable.tried.length).toBeLessThanOrEqual(3);
  });

  it('gives up a stream that falls silent (a connection that died without a word, a buffering proxy), reopens it, and ends by polling', async () => {
    let cancelled = 0;
    let unanswered = 0;
    // The headers of an event stream, then nothing: no event, no keep-alive, no end. The first
    // open gets no answer at all, until the client gives up on it.
    const silent = withEventsFetch(async (url, init) => {
      if (silent.tried.length === 1) {
        return new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => (unanswered++, reject(init.signal!.reason))));
      }
      return new Response(new ReadableStream({ cancel: () => void cancelled++ }), { headers: { 'content-type': 'text/event-stream' } });
    });
    const client = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: KEY, fetch: silent.fetch });
    const created = await client.create({ ...SMALL_V5S, seed: 12 });
    const done = await client.wait(created.id, { pollIntervalMs: 50, streamIdleTimeoutMs: 100 });
    expect(done).toMatchObject({ id: created.id, status: 'executed' });
    // Three silent streams in a row, each cut (its request or connection released), then polling for good.
    expect(silent.tried).toHaveLength(3);
    expect(unanswered).toBe(1);
    expect(cancelled).toBe(2);
  });

  it('rides out an API that is away for longer than the transport retries, and retries a download answered 503 or cut off mid-body', async () => {
    const created = await client.create({ ...SMALL_V5S, seed: 10 });
    const seen = { polls: 0, downloads: 0 };
    // Fault injection in front of the real API: 6 polls answered 503 (a database failover), 2 that
    // cannot connect (a restart), then the API as it is; the first download 503, the second cut off.
    const faulty: typeof fetch = async (input, init) => {
      const { pathname } = new URL(String(input));
      if (pathname === `/v1/predictions/${created.id}`) {
        seen.polls++;
        if (seen.polls <= 6) return Response.json({ success: false, error: { code: 'service_unavailable', message: 'the database is away', details: [] } }, { status: 503, headers: { 'retry-after': '0' } });
        if (seen.polls <= 8) throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
      }
      if (pathname.startsWith('/v1/files/')) {
        seen.downloads++;
        if (seen.downloads === 1) return Response.json({ success: false, error: { code: 'service_unavailable', message: 'the broker is away', details: [] } }, { status: 503, headers: { 'retry-after': '0' } });
        if (seen.downloads === 2) {
          const response = await fetch(input, init);
          await response.body?.cancel();
          return new Response(new ReadableStream({ start: (controller) => controller.error(new TypeError('terminated')) }), { status: 200, headers: response.headers });
        }
      }
      return fetch(input, init);
    };
    const patient = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: KEY, fetch: faulty });
    const done = await patient.wait(created.id, { stream: false, pollIntervalMs: 50 });
    expect(done).toMatchObject({ id: created.id, status: 'executed' });
    expect(seen.polls).toBeGreaterThan(8);
    const bytes = await patient.download((done.output as { images: string[] }).images[0]!);
    expect([...bytes.subarray(0, 8)]).toEqual(PNG_SIGNATURE);
    expect(seen.downloads).toBe(3);
  });

  it('never reports a status going back, as a replica whose read cache lags may answer', async () => {
    const created = await client.create({ ...SMALL_V5S, seed: 11 });
    let executingPolls = 0;
    // Fault injection: the second poll that says executing is answered with the record as it was when queued.
    const lagging: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (new URL(String(input)).pathname !== `/v1/predictions/${created.id}`) return response;
      const envelope = (await response.json()) as { data: PredictionRecord };
      if (envelope.data.status === 'executing' && ++executingPolls === 2) envelope.data = { ...envelope.data, status: 'queued', startedAt: null };
      return Response.json(envelope, { status: response.status });
    };
    const statuses: PredictionStatus[] = [];
    const done = await new QrArtClient({ baseUrl: stack.baseUrl, apiKey: KEY, fetch: lagging }).wait(created.id, { stream: false, pollIntervalMs: 50, onStatus: (r) => statuses.push(r.status) });
    expect(done.status).toBe('executed');
    expect(executingPolls).toBeGreaterThanOrEqual(2); // the stale answer was served
    expect(statuses).toEqual(['queued', 'executing', 'executed']);
  });

  it('an aborted wait rejects with the signal reason and leaves the prediction alone', async () => {
    const created = await client.create({ ...SMALL_V5S, seed: 9 });
    const controller = new AbortController();
    // Polling: Node 20's fetch answers a stream cut mid-way by opening a spare connection,
    // which keeps the API's close() waiting past this file's teardown.
    const waiting = client.wait(created.id, { stream: false, signal: controller.signal, onStatus: () => controller.abort(new Error('caller gave up')) });
    await expect(waiting).rejects.toThrow('caller gave up');
    const record = await client.wait(created.id);
    expect(record.status).toBe('executed');
  });
});

const ORDER: PredictionStatus[] = ['queued', 'executing', 'executed', 'failed'];
