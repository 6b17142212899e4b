/**
 * The client's plain calls against the real API (no worker: nothing here needs a generation):
 * list paging, every page through listAll, quotes, the API's refusals as QrArtApiError with
 * their details, and the retry rule for creates (only with an Idempotency-Key).
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QrArtApiError, QrArtClient, QrArtConnectionError, type CreateBody } from '../../src/client/index.ts';
import { balanceOf } from '../../src/store/accounts.ts';
import { waitFor, type TestStack } from '../helpers/service.ts';
import { SMALL_V5S, startClientStack } from './stack.ts';

const LISTER = 'key-client-list-0123456789abcdef012345';
const POOR = 'key-client-poor-0123456789abcdef012345';
const RETRIER = 'key-client-retry-0123456789abcdef01234';
const CUTOFF = 'key-client-cutoff-0123456789abcdef0123';

/** Fault injection in front of the real API: the first `times` creates reach the API, but their answer is replaced by a 503. */
function answerLostThen503(times: number): { fetch: typeof fetch; creates: number } {
  const state = { creates: 0, fetch: (async () => new Response()) as typeof fetch };
  state.fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (init?.method !== 'POST' || !String(input).endsWith('/v1/predictions/queue')) return response;
    state.creates++;
    if (state.creates > times) return response;
    await response.body?.cancel();
    // What a proxy in front of the API says when its upstream answer was lost.
    return Response.json(
      { success: false, error: { code: 'service_unavailable', message: 'upstream went away', details: [] } },
      { status: 503, headers: { 'retry-after': '0' } },
    );
  };
  return state;
}

/** Fault injection: the first `times` requests matching `which` reach the API, whose answer then breaks off after its headers. */
function answerCutOff(times: number, which: (url: string, init?: RequestInit) => boolean): { fetch: typeof fetch; sent: number } {
  const state = { sent: 0, fetch: (async () => new Response()) as typeof fetch };
  state.fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (!which(String(input), init)) return response;
    state.sent++;
    if (state.sent > times) return response;
    await response.body?.cancel();
    // What undici gives when the connection closes mid-body: the headers came, the body read fails.
    const broken = new ReadableStream({ start: (controller) => controller.error(new TypeError('terminated')) });
    return new Response(broken, { status: response.status, headers: response.headers });
  };
  return state;
}

describe('QrArtClient requests', () => {
  let stack: TestStack;
  let client: QrArtClient;
  const ids: string[] = [];

  beforeAll(async () => {
    stack = await startClientStack({ env: { API_KEYS: `lena:${LISTER}:100,pat:${POOR}:1,rita:${RETRIER}:100,cora:${CUTOFF}:100` } });
    client = new QrArtClient({ baseUrl: `${stack.baseUrl}/`, apiKey: LISTER });
    // Five predictions, created one after another so their order is known (newest first in the list).
    for (let i = 0; i < 5; i++) ids.unshift((await client.create({ ...SMALL_V5S, seed: i })).id);
  });
  afterAll(async () => stack?.stop());

  it('lists one page at a time with the paging fields, and listAll walks every page newest first', async () => {
    const first = await client.list({ limit: 2 });
    expect(first).toMatchObject({ totalDocs: 5, limit: 2, offset: 0, page: 1, totalPages: 3, hasNextPage: true, nextPage: 2, hasPrevPage: false });
    expect(first.docs.map((d) => d.id)).toEqual(ids.slice(0, 2));
    const last = await client.list({ limit: 2, offset: 4 });
    expect(last).toMatchObject({ page: 3, hasNextPage: false, nextPage: null, prevPage: 2 });
    expect(last.docs.map((d) => d.id)).toEqual(ids.slice(4));
    expect(last.docs[0]).not.toHaveProperty('createdAt'); // listed items omit it (spec 2.3)
    expect(await client.list({ limit: 2, page: 3 })).toEqual(last);

    const all: string[] = [];
    for await (const doc of client.listAll({ pageSize: 2 })) all.push(doc.id);
    expect(all).toEqual(ids);
  });

  it('listAll does not repeat a prediction when one is created between two pages', async () => {
    const seen: string[] = [];
    for await (const doc of client.listAll({ pageSize: 2 })) {
      seen.push(doc.id);
      // After the first page, a new prediction pushes every older one a place down.
      if (seen.length === 2) ids.unshift((await client.create({ ...SMALL_V5S, seed: 99 })).id);
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(ids.slice(1));
  });

  it('quotes a body: the price a create then charges and the normalized input, nothing created or charged by the quote', async () => {
    const body = { ...SMALL_V5S, batchSize: 2, resolution: 'HD' } as const;
    const before = await balanceOf(stack.api.db, 'lena');
    const quote = await client.quote(body);
    expect(quote).toMatchObject({ workflow: 'generate_qr_art_v5s', input: { batchSize: 2, resolution: 'HD', cfg: 1 } });
    expect(quote.input).not.toHaveProperty('seed');
    expect(await balanceOf(stack.api.db, 'lena')).toBe(before);
    expect((await client.list()).totalDocs).toBe(ids.length);

    const created = await client.create(body);
    ids.unshift(created.id);
    expect(created.credits).toBe(quote.credits);
    expect(await balanceOf(stack.api.db, 'lena')).toBe(before - Math.round(quote.credits * 100)); // cents
  });

  it('maps the API refusals to QrArtApiError with status, code, message and the details naming each field', async () => {
    const invalid = await client.create({ ...SMALL_V5S, qrRatio: 5, steps: 99 }).catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(QrArtApiError);
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request', retryAfter: null });
    const fields = (invalid as QrArtApiError).details.map((d) => [d.field, d.rule]);
    expect(fields).toEqual(expect.arrayContaining([['qrRatio', 'max'], ['steps', 'max']]));
    expect((invalid as QrArtApiError).requestId).toEqual(expect.any(String));

    // A body the types refuse still reaches the server's rules from untyped callers.
    const wrongWorkflow = await client.create({ workflow: 'generate_qr_art_v9' } as unknown as CreateBody).catch((error: unknown) => error);
    expect(wrongWorkflow).toMatchObject({ status: 400, details: [expect.objectContaining({ field: 'workflow' })] });

    await expect(client.get('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(client.list({ limit: 101 })).rejects.toMatchObject({ status: 400, details: [expect.objectContaining({ field: 'limit', rule: 'max' })] });

    const stranger = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: 'not-a-key-0123456789abcdef0123456789' });
    await expect(stranger.list()).rejects.toMatchObject({ status: 401, code: 'unauthorized', details: [{ field: 'x-api-key', rule: 'valid_api_key' }] });

    const poor = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: POOR });
    await expect(poor.create({ ...SMALL_V5S, batchSize: 4 })).rejects.toMatchObject({ status: 402, code: 'insufficient_credits', details: [{ field: 'credits' }] });
  });

  it('a server that cannot be reached is a QrArtConnectionError, after the retries of a safe request', async () => {
    const attempts: string[] = [];
    const nowhere = new QrArtClient({
      baseUrl: 'http://127.0.0.1:1',
      apiKey: LISTER,
      retries: 2,
      fetch: async (input, init) => (attempts.push(String(input)), fetch(input, init)),
    });
    const error = await nowhere.get('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QrArtConnectionError);
    expect((error as Error).message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:1: /);
    expect(attempts).toHaveLength(3);
  });

  it('a server that takes a request and never answers is a lost connection after requestTimeoutMs, retried like one', async () => {
    // A listener that accepts and reads, and says nothing: undici alone would wait 5 minutes.
    const sockets: Socket[] = [];
    let requests = 0;
    const silent = createServer(() => void requests++).on('connection', (socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const stalled = new QrArtClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: LISTER, retries: 1, requestTimeoutMs: 300, maxRetryDelayMs: 10 });
      const t0 = performance.now();
      const error = await stalled.list().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QrArtConnectionError);
      expect((error as Error).message).toBe(`no answer from http://127.0.0.1:${port} within 0.3 s (requestTimeoutMs)`);
      expect(requests).toBe(2); // tried twice
      expect(performance.now() - t0).toBeLessThan(5_000);
      // The caller's own signal is still the caller's: its reason, not a lost connection.
      const caller = new AbortController();
      setTimeout(() => caller.abort(new Error('caller gave up')), 50);
      await expect(stalled.list({ signal: caller.signal })).rejects.toThrow('caller gave up');
      expect(() => new QrArtClient({ baseUrl: 'http://127.0.0.1:1', requestTimeoutMs: 0 })).toThrow(TypeError);
      // Past a timer's limit it would fire at once: refused; Infinity is no limit at all.
      expect(() => new QrArtClient({ baseUrl: 'http://127.0.0.1:1', requestTimeoutMs: 3e9 })).toThrow(TypeError);
      const unbounded = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: LISTER, requestTimeoutMs: Infinity });
      expect((await unbounded.list()).totalDocs).toBeGreaterThan(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('wait says when the API is away and when it is back, and opens the event stream again once it is', async () => {
    const created = await client.create({ ...SMALL_V5S, seed: 40 });
    let down = true;
    const streamsAfterBack: string[] = [];
    // Fault injection: a restart: while down nothing connects; then the real API (no worker here: the prediction stays queued).
    const restarting: typeof fetch = async (input, init) => {
      if (down) throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
      if (new URL(String(input)).pathname.endsWith('/events')) streamsAfterBack.push(String(input));
      return fetch(input, init);
    };
    const waiter = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: LISTER, fetch: restarting, retries: 0 });
    const away: (string | null)[] = [];
    const stop = new AbortController();
    const waiting = waiter.wait(created.id, { pollIntervalMs: 50, signal: stop.signal, onApiAway: (error) => away.push(error ? error.message : null) });
    // Long enough for the stream to break three times in a row, which alone would mean polling for good.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(away).toEqual(['cannot reach ' + new URL(stack.baseUrl).origin + ': connect ECONNREFUSED']);
    down = false;
    await waitFor(async () => (streamsAfterBack.length > 0 ? true : undefined), 10_000, 20);
    expect(away).toEqual([expect.any(String), null]);
    stop.abort(new Error('done looking'));
    await expect(waiting).rejects.toThrow('done looking');
  });

  it('an answer that breaks off mid-body is a lost answer: a keyed create is retried and charged once, a read is retried', async () => {
    const before = await balanceOf(stack.api.db, 'cora');
    const creates = answerCutOff(1, (url, init) => init?.method === 'POST' && url.endsWith('/v1/predictions/queue'));
    const retrying = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: CUTOFF, fetch: creates.fetch });
    const record = await retrying.create(SMALL_V5S, { idempotencyKey: 'client-test-cutoff-1' });
    expect(creates.sent).toBe(2);
    expect(await balanceOf(stack.api.db, 'cora')).toBe(before - 149); // cents: one charge
    expect((await retrying.list()).totalDocs).toBe(1);

    const reads = answerCutOff(2, (url, init) => (init?.method ?? 'GET') === 'GET' && url.endsWith(`/v1/predictions/${record.id}`));
    const reader = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: CUTOFF, fetch: reads.fetch });
    expect(await reader.get(record.id)).toMatchObject({ id: record.id });
    expect(reads.sent).toBe(3);
    // Without a key the create is not repeated: the broken answer reaches the caller as a lost connection.
    const unkeyed = answerCutOff(1, (url, init) => init?.method === 'POST' && url.endsWith('/v1/predictions/queue'));
    const careful = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: CUTOFF, fetch: unkeyed.fetch });
    const lost = await careful.create(SMALL_V5S).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(QrArtConnectionError);
    expect((lost as Error).message).toMatch(/^the answer from http:\/\/127\.0\.0\.1:\d+ broke off: terminated$/);
    expect(unkeyed.sent).toBe(1);
  });

  it('a key or Idempotency-Key that no header can carry is a TypeError naming it, thrown before anything is sent; a key read with its trailing newline works', async () => {
    expect(() => new QrArtClient({ baseUrl: stack.baseUrl, apiKey: `${LISTER}\n${POOR}` })).toThrow(/^apiKey holds a line break/);
    expect(() => new QrArtClient({ baseUrl: stack.baseUrl, apiKey: `${LISTER}\u20ac` })).toThrow(/^apiKey holds a character beyond Latin-1/);

    const sent: string[] = [];
    const client = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: `${LISTER}\n`, fetch: async (input, init) => (sent.push(String(input)), fetch(input, init)) });
    expect(typeof (await client.list()).totalDocs).toBe('number'); // answered: the key went out trimmed
    const refused = await client.create(SMALL_V5S, { idempotencyKey: 'client-test\r\nx-other: 1' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as Error).message).toBe('idempotency-key holds a line break or NUL inside it, which no HTTP header can carry');
    expect(sent).toHaveLength(1); // the list; the create was never sent, nor retried as a connection failure
  });

  it('with an Idempotency-Key, a create whose answer was lost (503, Retry-After) is retried and charged once; without one it is not retried', async () => {
    const before = await balanceOf(stack.api.db, 'rita');
    const keyed = answerLostThen503(1);
    const retrying = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: RETRIER, fetch: keyed.fetch });
    const record = await retrying.create(SMALL_V5S, { idempotencyKey: 'client-test-0001' });
    expect(keyed.creates).toBe(2);
    expect(record).toMatchObject({ status: 'queued', credits: 1.49 });
    expect(await balanceOf(stack.api.db, 'rita')).toBe(before - 149); // cents
    expect((await retrying.list()).totalDocs).toBe(1);

    const unkeyed = answerLostThen503(1);
    const careful = new QrArtClient({ baseUrl: stack.baseUrl, apiKey: RETRIER, fetch: unkeyed.fetch });
    const refused = await careful.create(SMALL_V5S).catch((error: unknown) => error);
    expect(unkeyed.creates).toBe(1);
    expect(refused).toMatchObject({ status: 503, code: 'service_unavailable', retryAfter: 0 });
    // The first create did reach the API: the caller is the one who must decide (here: it was charged).
    expect((await careful.list()).totalDocs).toBe(2);
  });
});
