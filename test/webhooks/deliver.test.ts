import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LookupAllFn } from '../../src/net/safe-url.ts';
import { deliverWebhook, outcomeForStatus } from '../../src/webhooks/deliver.ts';
import { generateSecret } from '../../src/webhooks/sign.ts';
import { fakeLookup } from '../helpers/fake-dns.ts';

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const dev = { allowPrivate: true };
const strict = { allowPrivate: false };
const secret = generateSecret();
const body = JSON.stringify({ id: 'pred_1', status: 'succeeded', output: ['https://cdn.example/a.png'], s: 'é✓' });

let server: http.Server;
let base: string;
let received: Received[] = [];
/** Behaviour per path. */
const routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => void> = {
  '/ok': (_q, s) => s.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
  '/no-content': (_q, s) => s.writeHead(204).end(),
  '/e500': (_q, s) => s.writeHead(500).end('boom'),
  '/e503': (_q, s) => s.writeHead(503, { 'retry-after': '120' }).end(),
  '/e429': (_q, s) => s.writeHead(429, { 'retry-after': 'Wed, 21 Oct 2099 07:28:00 GMT' }).end(),
  '/e408': (_q, s) => s.writeHead(408).end(),
  '/e400': (_q, s) => s.writeHead(400).end('bad'),
  '/e404': (_q, s) => s.writeHead(404).end(),
  '/e410': (_q, s) => s.writeHead(410).end(),
  '/redirect': (_q, s) => s.writeHead(302, { location: '/ok' }).end(),
  '/hang': () => {
    /* never answers */
  },
  '/big': (_q, s) => {
    // 2 MiB body that we must not read in full.
    s.writeHead(200);
    const chunk = Buffer.alloc(64 * 1024, 120);
    let n = 0;
    const write = (): void => {
      while (n < 32) {
        n++;
        if (!s.write(chunk)) {
          s.once('drain', write);
          return;
        }
      }
      s.end();
    };
    write();
  },
  '/slow-body': (_q, s) => {
    s.writeHead(200);
    s.write('partial'); // ...and never ends
  },
  '/late-headers-slow-body': (_q, s) => {
    // Headers just before the attempt's deadline, then a body that never ends.
    setTimeout(() => s.writeHead(503).write('partial'), 700);
  },
};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const path = (req.url ?? '').split('?')[0] ?? '';
      const route = routes[path];
      if (route) route(req, res);
      else res.writeHead(599).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  received = [];
});

function deliver(url: string, extra: Partial<Parameters<typeof deliverWebhook>[0]> = {}) {
  return deliverWebhook({ url, body, msgId: 'msg_test_1', secret, policy: dev, userAgent: 'qr-art-test/1', ...extra });
}

describe('deliverWebhook', () => {
  it('POSTs a signed body that standardwebhooks verifies', async () => {
    const outcome = await deliver(`${base}/ok?x=1`);
    expect(outcome).toEqual({ kind: 'delivered', status: 200 });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/ok?x=1');
    expect(r.body).toBe(body);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['user-agent']).toBe('qr-art-test/1');
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(r.headers['webhook-id']).toBe('msg_test_1');
    expect(Number(r.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1);
    expect(r.headers['webhook-signature']).toMatch(/^v1,/);
    const h = r.headers as Record<string, string>;
    expect(new Webhook(secret).verify(r.body, h)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(r.body.replace('succeeded', 'failed'), h)).toThrow();
  });

  it('uses the given timestamp and keeps webhook-id stable', async () => {
    const ts = Math.floor(Date.now() / 1000) - 10;
    await deliver(`${base}/ok`, { timestampSec: ts });
    await deliver(`${base}/ok`);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual(['msg_test_1', 'msg_test_1']);
    expect(received[0]!.headers['webhook-timestamp']).toBe(String(ts));
    for (const r of received) expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
  });

  it('delivered on 204', async () => {
    expect(await deliver(`${base}/no-content`)).toEqual({ kind: 'delivered', status: 204 });
  });

  it('retry on 500', async () => {
    expect(await deliver(`${base}/e500`)).toEqual({ kind: 'retry', reason: 'HTTP 500', status: 500, retryAfter: null });
  });

  it('retry on 503 with Retry-After seconds', async () => {
    expect(await deliver(`${base}/e503`)).toEqual({ kind: 'retry', reason: 'HTTP 503', status: 503, retryAfter: '120' });
  });

  it('retry on 429 with Retry-After date', async () => {
    expect(await deliver(`${base}/e429`)).toEqual({
      kind: 'retry',
      reason: 'HTTP 429',
      status: 429,
      retryAfter: 'Wed, 21 Oct 2099 07:28:00 GMT',
    });
  });

  it('retry on 408', async () => {
    expect(await deliver(`${base}/e408`)).toMatchObject({ kind: 'retry', status: 408 });
  });

  it.each([400, 404, 410])('give_up on %d', async (status) => {
    expect(await deliver(`${base}/e${status}`)).toEqual({ kind: 'give_up', reason: `HTTP ${status}`, status });
  });

  it('give_up on a redirect, without following it', async () => {
    expect(await deliver(`${base}/redirect`)).toEqual({ kind: 'give_up', reason: 'redirects are not followed', status: 302 });
    expect(received.map((r) => r.url)).toEqual(['/redirect']);
  });

  it('retry on a closed port', async () => {
    const tmp = http.createServer();
    await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', r));
    const port = (tmp.address() as AddressInfo).port;
    await new Promise((r) => tmp.close(r));
    const outcome = await deliver(`http://127.0.0.1:${port}/hook`);
    expect(outcome.kind).toBe('retry');
    expect(outcome).toMatchObject({ reason: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('retry when the server never answers (timeout)', async () => {
    const t0 = Date.now();
    const outcome = await deliver(`${base}/hang`, { timeoutMs: 300 });
    expect(outcome).toEqual({ kind: 'retry', reason: expect.stringMatching(/300 ms/) });
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('retry on DNS failure', async () => {
    const failing: LookupAllFn = async (host) => {
      const err = new Error(`getaddrinfo ENOTFOUND ${host}`) as NodeJS.ErrnoException;
      err.code = 'ENOTFOUND';
      throw err;
    };
    expect(await deliver('https://hooks.example.invalid/x', { policy: strict, lookup: failing })).toEqual({
      kind: 'retry',
      reason: expect.stringMatching(/ENOTFOUND/),
    });
  });

  it('reads at most 64 KiB of a large response and still reports the status', async () => {
    expect(await deliver(`${base}/big`)).toEqual({ kind: 'delivered', status: 200 });
  });

  it('reports the status when the response body stalls', async () => {
    expect(await deliver(`${base}/slow-body`, { timeoutMs: 300 })).toEqual({ kind: 'delivered', status: 200 });
  });

  it('one deadline covers the whole attempt: headers late, then a stalled body, end it at timeoutMs, not timeoutMs after the headers', async () => {
    const t0 = Date.now();
    expect(await deliver(`${base}/late-headers-slow-body`, { timeoutMs: 1000 })).toMatchObject({ kind: 'retry', status: 503 });
    // Before: the timer restarted at the headers, ending the attempt at about 1700 ms.
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('connects through the checked lookup for host names', async () => {
    const port = new URL(base).port;
    const lookup: LookupAllFn = async () => [{ address: '127.0.0.1', family: 4 }];
    expect(await deliver(`http://receiver.test:${port}/ok`, { lookup })).toEqual({ kind: 'delivered', status: 200 });
    expect(received[0]!.headers.host).toBe(`receiver.test:${port}`);
  });

  describe('unsafe destinations (allowPrivate=false) give up without sending', () => {
    it.each([
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      'https://10.1.2.3/hook',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[fe80::1]/hook',
      'http://example.com/hook',
      'https://user:pw@example.com/hook',
      'ftp://example.com/hook',
      'not a url',
    ])('%s', async (url) => {
      const outcome = await deliver(url, { policy: strict });
      expect(outcome.kind).toBe('give_up');
    });

    it('a public-looking name that resolves to a private address', async () => {
      const lookup: LookupAllFn = async () => [{ address: '192.168.1.20', family: 4 }];
      const outcome = await deliver('https://hooks.customer.example/x', { policy: strict, lookup });
      expect(outcome).toEqual({ kind: 'give_up', reason: expect.stringMatching(/192\.168\.1\.20.*not public/) });
    });

    it('the local test server itself via a rebinding name', async () => {
      const port = new URL(base).port;
      const lookup: LookupAllFn = async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '::ffff:127.0.0.1', family: 6 },
      ];
      const outcome = await deliver(`https://rebind.example:${port}/ok`, { policy: strict, lookup });
      expect(outcome).toEqual({ kind: 'give_up', reason: expect.stringMatching(/::ffff:127\.0\.0\.1/) });
      expect(received).toHaveLength(0);
    });
  });

  describe('plain http under allowPrivate reaches private receivers only', () => {
    it('delivers to a name that resolves to loopback', async () => {
      const port = new URL(base).port;
      const lookup: LookupAllFn = async () => [{ address: '127.0.0.1', family: 4 }];
      expect(await deliver(`http://receiver.test:${port}/ok`, { policy: dev, lookup })).toEqual({ kind: 'delivered', status: 200 });
    });

    it('gives up without sending when the DNS answer is public', async () => {
      const lookup: LookupAllFn = async () => [{ address: '93.184.216.34', family: 4 }];
      const outcome = await deliver('http://hooks.customer.example/x', { policy: dev, lookup });
      expect(outcome).toEqual({ kind: 'give_up', reason: expect.stringMatching(/93\.184\.216\.34, which is public: plain http is allowed only to loopback or private hosts/) });
    });

    it('gives up without sending when any address of the answer is public, even one that would reach the receiver', async () => {
      const port = new URL(base).port;
      const lookup: LookupAllFn = async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '93.184.216.34', family: 4 },
      ];
      const outcome = await deliver(`http://half.example:${port}/ok`, { policy: dev, lookup });
      expect(outcome).toEqual({ kind: 'give_up', reason: expect.stringMatching(/which is public/) });
      expect(received).toHaveLength(0);
    });

    it('gives up on a literal public address without resolving anything', async () => {
      const lookup = fakeLookup({});
      const outcome = await deliver('http://93.184.216.34/x', { policy: dev, lookup });
      expect(outcome).toEqual({ kind: 'give_up', reason: expect.stringMatching(/address 93\.184\.216\.34 is public/) });
      expect(lookup.calls).toEqual([]);
    });
  });

  it('give_up on an invalid secret, never throwing', async () => {
    expect(await deliver(`${base}/ok`, { secret: 'nope' })).toEqual({
      kind: 'give_up',
      reason: expect.stringMatching(/whsec_/),
    });
    expect(received).toHaveLength(0);
  });
});

describe('outcomeForStatus', () => {
  it.each([
    [200, 'delivered'],
    [201, 'delivered'],
    [299, 'delivered'],
    [301, 'give_up'],
    [304, 'give_up'],
    [307, 'give_up'],
    [400, 'give_up'],
    [401, 'give_up'],
    [408, 'retry'],
    [413, 'give_up'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [599, 'retry'],
    [600, 'give_up'],
  ])('%d -> %s', (status, kind) => {
    expect(outcomeForStatus(status).kind).toBe(kind);
  });
});
