import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResponse } from '../helpers/raw-http.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

// Oversized and slow request bodies over a real socket: what a client that keeps sending,
// then reads, actually gets back (inject() never shows a reset connection or a timeout).

const KEY = 'key-body-limits-0123456789abcdef0';
const REQUEST_TIMEOUT_MS = 2000;
const MiB = 1024 * 1024;

interface Exchange {
  status: number | null;
  headers: Record<string, string>;
  body: any;
  /** The socket error the client saw (ECONNRESET, EPIPE), if any. */
  error: string | null;
  /** Body bytes handed to the socket before it was answered and closed, or all of them. */
  bytesSent: number;
  /** Whether every body chunk was written. */
  sentAll: boolean;
  ms: number;
  /** The socket, still open when the server kept the connection (destroy it when done). */
  closed: boolean;
  socket: ReturnType<typeof connect>;
}

/**
 * Writes `head`, then every chunk of `chunks` (waiting for the socket to drain, as a client
 * does, and `gapMs` between chunks), then reads until one whole response arrived, the socket
 * closed, or `waitMs` passed. Stops sending early only when the socket failed or closed, or a
 * response arrived while trickling (gapMs > 0).
 */
function exchange(baseUrl: string, head: string, chunks: Iterable<Buffer>, options: { gapMs?: number; waitMs?: number } = {}): Promise<Exchange> {
  const url = new URL(baseUrl);
  const started = Date.now();
  const socket = connect(Number(url.port), url.hostname);
  let received = Buffer.alloc(0);
  let error: string | null = null;
  let closed = false;
  let wake: () => void = () => undefined;
  const changed = () => new Promise<void>((resolve) => (wake = resolve));
  socket.on('data', (data: Buffer) => {
    received = Buffer.concat([received, data]);
    wake();
  });
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error ??= e.code ?? e.message;
    wake();
  });
  socket.on('close', () => {
    closed = true;
    wake();
  });
  socket.on('drain', () => wake());

  return (async () => {
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.write(head);
    let bytesSent = 0;
    let sentAll = true;
    for (const chunk of chunks) {
      if (error || closed || (options.gapMs && parseResponse(received))) {
        sentAll = false;
        break;
      }
      if (options.gapMs) await new Promise((resolve) => setTimeout(resolve, options.gapMs));
      if (!socket.write(chunk)) {
        while (socket.writableNeedDrain && !error && !closed) await changed();
      }
      bytesSent += chunk.length;
    }
    const deadline = Date.now() + (options.waitMs ?? 5000);
    while (!parseResponse(received) && !closed && Date.now() < deadline) {
      await Promise.race([changed(), new Promise((resolve) => setTimeout(resolve, Math.max(1, deadline - Date.now())))]);
    }
    const response = parseResponse(received);
    let body: unknown = null;
    try {
      body = response ? JSON.parse(response.text) : null;
    } catch {
      body = response?.text ?? null;
    }
    return { status: response?.status ?? null, headers: response?.headers ?? {}, body, error, bytesSent, sentAll, ms: Date.now() - started, closed, socket };
  })();
}

/** `total` bytes of a JSON object (one long string field), in `size`-byte pieces. */
function* jsonBody(total: number, size = 64 * 1024): Generator<Buffer> {
  const prefix = '{"workflow":"generate_qr_art_v4","qrText":"';
  const bytes = Buffer.alloc(total, 'a'.charCodeAt(0));
  bytes.write(prefix, 0, 'latin1');
  bytes.write('"}', total - 2, 'latin1');
  for (let at = 0; at < total; at += size) yield bytes.subarray(at, Math.min(total, at + size));
}

/** The same pieces framed as transfer-encoding: chunked, with the terminating chunk. */
function* chunked(pieces: Iterable<Buffer>): Generator<Buffer> {
  for (const piece of pieces) yield Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
  yield Buffer.from('0\r\n\r\n');
}

function post(headers: string): string {
  return `POST /v1/predictions/queue HTTP/1.1\r\nhost: localhost\r\nx-api-key: ${KEY}\r\ncontent-type: application/json\r\n${headers}\r\n`;
}

function expectPayloadTooLarge(response: Exchange) {
  expect({ status: response.status, code: response.body?.error?.code, success: response.body?.success }).toEqual({
    status: 413,
    code: 'payload_too_large',
    success: false,
  });
}

describe('request bodies over a real socket', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `limits:${KEY}:10`, REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) } });
  });
  afterAll(async () => stack?.stop());

  it('answers a 10 MiB body with content-length with the 413 body, which the client reads after sending it all', async () => {
    const response = await exchange(stack.baseUrl, post(`content-length: ${10 * MiB}\r\n`), jsonBody(10 * MiB));
    response.socket.destroy();
    expect(response.error).toBeNull();
    expect(response.sentAll).toBe(true);
    expectPayloadTooLarge(response);
  });

  it('answers a 10 MiB chunked body with the 413 body, and the connection then serves the next request', async () => {
    const response = await exchange(stack.baseUrl, post('transfer-encoding: chunked\r\n'), chunked(jsonBody(10 * MiB)));
    try {
      expect(response.error).toBeNull();
      expect(response.sentAll).toBe(true);
      expectPayloadTooLarge(response);
      // The rest of the body was read and discarded, so the next request on the connection is understood.
      expect(response.closed).toBe(false);
      const next = await new Promise<string>((resolve) => {
        let text = '';
        response.socket.on('data', (data: Buffer) => {
          text += data.toString('latin1');
          if (text.includes('"status":"ok"')) resolve(text);
        });
        response.socket.on('close', () => resolve(text));
        response.socket.write('GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n');
      });
      expect(next).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      response.socket.destroy();
    }
  });

  it('answers a 10 MiB outpainting body on GET (read by the route itself) with the 413 body, which the client reads after sending it all', async () => {
    const head = `GET /v1/predictions/queue HTTP/1.1\r\nhost: localhost\r\nx-api-key: ${KEY}\r\ncontent-type: application/json\r\ncontent-length: ${10 * MiB}\r\n\r\n`;
    const response = await exchange(stack.baseUrl, head, jsonBody(10 * MiB));
    response.socket.destroy();
    expect(response.error).toBeNull();
    expect(response.sentAll).toBe(true);
    expectPayloadTooLarge(response);
  });

  it('stops reading a refused chunked body past the drain cap: the 413 came first, then the connection closes', async () => {
    const response = await exchange(stack.baseUrl, post('transfer-encoding: chunked\r\n'), chunked(jsonBody(48 * MiB)));
    response.socket.destroy();
    expectPayloadTooLarge(response);
    expect(response.sentAll).toBe(false);
    expect(response.error ?? (response.closed ? 'closed' : null)).not.toBeNull();
  });

  it(`answers a body that trickles a byte a second with 408 within REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS} ms)`, async () => {
    const response = await exchange(stack.baseUrl, post('content-length: 100\r\n'), jsonBody(100, 1), { gapMs: 1000, waitMs: 10_000 });
    response.socket.destroy();
    expect(response.status).toBe(408);
    expect(response.body?.error?.code).toBe('request_timeout');
    // Written straight to the socket, below fastify: it still carries a request id.
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    // Timeouts are checked once a second at most.
    expect(response.ms).toBeLessThan(REQUEST_TIMEOUT_MS + 2000);
  });

  it('answers headers over 16 KiB with 431 in our error body, with a request id, and closes', async () => {
    const head = `GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`;
    const response = await exchange(stack.baseUrl, head, []);
    response.socket.destroy();
    expect(response.status).toBe(431);
    expect(response.body).toEqual({
      success: false,
      error: { code: 'invalid_request', message: 'the request headers are too large', details: [{ field: 'headers', rule: 'max_header_size' }] },
    });
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
