/**
 * The client against the real stack with a diffusion worker on the demo models: create, wait
 * on the event stream with progress, download; the same wait by polling where the event
 * stream is missing (404, as on an older server) or cannot be reached; and the webhook of the
 * same prediction verified with verifyWebhook.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QrArtClient, verifyWebhook, type PredictionRecord, type PredictionStatus, type Progress } from '../../src/client/index.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/flows.ts';
import { TEST_SECRET, waitFor, type TestStack } from '../helpers/service.ts';
import { PNG_SIGNATURE, SMALL_V5S, startClientStack } from './stack.ts';

const KEY = 'key-client-wait-0123456789abcdef01234';

/** A fetch that sends the event-stream requests to `events` and everything else on. */
function withEventsFetch(events: (url: string) => Promise<Response>): { fetch: typeof fetch; tried: string[] } {
  const tried: string[] = [];
  return {
    tried,
    fetch: async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (!/\/events$/.test(new URL(url).pathname)) return fetch(input, init);
      tried.push(url);
      return events(url);
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
