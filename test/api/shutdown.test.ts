import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResponse } from '../helpers/raw-http.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

// The API stopping (SIGTERM in a rolling deploy) over real sockets: what clients in the middle
// of a request, and clients holding a kept connection, get back.

const KEY = 'key-shutdown-0123456789abcdef01234';
/** Longer than the 5 s the stop used to give requests in flight, well inside REQUEST_TIMEOUT_MS (30 s). */
const BODY_GAP_MS = 6500;

/** Every JSON response, one after another, in what a socket received. */
function parseResponses(bytes: Buffer): { status: number; headers: Record<string, string>; body: any }[] {
  const responses = [];
  for (let rest = bytes, next = parseResponse(rest); next; rest = rest.subarray(next.length), next = parseResponse(rest)) {
    responses.push({ status: next.status, headers: next.headers, body: JSON.parse(next.text) });
  }
  return responses;
}

function open(baseUrl: string): { socket: Socket; received: () => Buffer; closed: Promise<number> } {
  const url = new URL(baseUrl);
  const socket = connect(Number(url.port), url.hostname);
  let received = Buffer.alloc(0);
  socket.on('data', (data: Buffer) => (received = Buffer.concat([received, data])));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  return { socket, received: () => received, closed };
}

describe('the API stopping', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `shutdown:${KEY}:100` } });
  });
  afterAll(async () => stack?.stop());

  it('lets a request in flight finish, answers the next one on its connection 503 in our body, and is not held by an unused connection', async () => {
    const body = JSON.stringify({ workflow: 'generate_qr_art_v5', prompt: 'a koi pond', qrContent: 'https://example.com/shutdown' });
    const busy = open(stack.baseUrl);
    // A connection a client opened and never used (fetch keeps a spare one).
    const spare = open(stack.baseUrl);
    busy.socket.write(
      `POST /v1/predictions/queue HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEY}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopStarted = Date.now();
    const stopped = stack.api.stop().then(() => Date.now());
    await new Promise((resolve) => setTimeout(resolve, BODY_GAP_MS));
    // The rest of the body, and a second request on the same kept connection.
    busy.socket.write(`${body.slice(10)}GET /v1/predictions?limit=1 HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEY}\r\n\r\n`);
    const busyClosed = await busy.closed;
    const stopEnded = await stopped;

    const [created, refused, ...more] = parseResponses(busy.received());
    expect(more).toEqual([]);
    expect(created?.status).toBe(200);
    expect(created?.body.data.status).toBe('queued');
    expect(refused?.status).toBe(503);
    expect(refused?.body).toEqual({
      success: false,
      error: { code: 'service_unavailable', message: expect.stringContaining('shutting down'), details: [{ field: '', rule: 'instance_available' }] },
    });
    expect(refused?.headers['retry-after']).toBe('1');
    expect(refused?.headers['x-request-id']).toBeTruthy();
    // The unused connection was ended at once, and the stop waited for nothing else.
    expect((await spare.closed) - stopStarted).toBeLessThan(2000);
    expect(spare.received().length).toBe(0);
    expect(stopEnded - busyClosed).toBeLessThan(2000);
    busy.socket.destroy();
    spare.socket.destroy();
  }, 30_000);
});
