import http from 'node:http';
import net from 'node:net';
import type { AddressInfo, LookupFunction } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeImage } from '../../src/image/decode.ts';
import { DEFAULT_IMAGE_FETCH_LIMITS, fetchImage, ImageFetchError } from '../../src/image/fetch.ts';
import type { FetchImageOptions } from '../../src/image/fetch.ts';
import type { LookupAllFn } from '../../src/net/safe-url.ts';
import { animatedGif, animatedWebp, handmadeGif, pngHeaderOnly, solid } from './fixtures.ts';
import { fakeLookup } from '../helpers/fake-dns.ts';

const dev = { allowPrivate: true };
const strict = { allowPrivate: false };
/** A public address (example.com's) that the tests pretend routes to the local server. */
const PUBLIC_ADDR = '93.184.216.34';


/**
 * Simulates a network in which PUBLIC_ADDR is routed to 127.0.0.1, so a strict-policy fetch can
 * reach the local server: fetch.ts's safeLookup still sees and checks the public answer of the
 * fake DNS; only afterwards, on the way to the socket, the checked address is swapped. No seam in
 * fetch.ts is needed, and a private answer from DNS is refused before this swap ever runs.
 */
function routePublicAddressToLocalhost(): () => void {
  const swap = (a: string): string => (a === PUBLIC_ADDR ? '127.0.0.1' : a);
  const original = net.Socket.prototype.connect;
  const spy = vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    const first = args[0];
    const options = (Array.isArray(first) ? first[0] : first) as { lookup?: LookupFunction } | undefined;
    const checked = options?.lookup;
    if (options && checked) {
      options.lookup = ((host: string, opts: object, cb: (...r: unknown[]) => void) =>
        checked(host, opts as never, (err, address, family) => {
          if (err) return cb(err, address, family);
          if (Array.isArray(address)) return cb(null, address.map((a: LookupAddress) => ({ ...a, address: swap(a.address) })));
          return cb(null, swap(address), family);
        })) as unknown as LookupFunction;
    }
    return Reflect.apply(original, this, args) as net.Socket;
  } as typeof original);
  return () => spy.mockRestore();
}

interface Hit {
  path: string;
  headers: http.IncomingHttpHeaders;
}

let server: http.Server;
let port: number;
let base: string;
let hits: Hit[] = [];
const fixtures: Record<string, Buffer> = {};
let endlessClosed: Promise<void> = Promise.resolve();

function serve(res: http.ServerResponse, body: Buffer, contentType = 'application/octet-stream'): void {
  res.writeHead(200, { 'content-type': contentType, 'content-length': body.length }).end(body);
}

const routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => void> = {
  '/img/png': (_q, s) => serve(s, fixtures.png!, 'text/plain'), // the Content-Type is ignored
  '/img/jpeg': (_q, s) => serve(s, fixtures.jpeg!),
  '/img/webp': (_q, s) => serve(s, fixtures.webp!, 'image/webp'),
  '/img/gif': (_q, s) => serve(s, fixtures.gif!, 'image/gif'),
  '/img/rotated.jpg': (_q, s) => serve(s, fixtures.rotated!, 'image/jpeg'),
  '/img/chunked.png': (_q, s) => {
    s.writeHead(200, { 'content-type': 'image/png' });
    const png = fixtures.png!;
    s.write(png.subarray(0, 5)); // fewer bytes than the sniff needs, then the rest
    setTimeout(() => s.end(png.subarray(5)), 20);
  },
  // Every byte its own HTTP chunk (corked, so that they go out together): a body the client must gather, not keep as pieces.
  '/img/one-byte-chunks.png': (_q, s) => {
    s.writeHead(200, { 'content-type': 'image/png' });
    const png = fixtures.bigPng!;
    s.cork();
    for (let i = 0; i < png.length; i++) s.write(png.subarray(i, i + 1));
    s.uncork();
    s.end();
  },
  '/text.png': (_q, s) => serve(s, Buffer.from('I am a text file with a .png name\n'), 'image/png'),
  '/page.html': (_q, s) => {
    s.writeHead(200, { 'content-type': 'image/png' });
    s.write('<!doctype html><html><head><title>Log in</title></head>'); // ...and never ends
  },
  '/bomb.png': (_q, s) => serve(s, fixtures.pngBomb!, 'image/png'),
  '/bomb.gif': (_q, s) => serve(s, fixtures.gifBomb!, 'image/gif'),
  '/bomb.webp': (_q, s) => serve(s, fixtures.webpBomb!, 'image/webp'),
  '/many-frames.gif': (_q, s) => serve(s, fixtures.manyFrames!, 'image/gif'),
  '/truncated-header.png': (_q, s) => serve(s, fixtures.png!.subarray(0, 20), 'image/png'),
  '/truncated-data.png': (_q, s) => serve(s, fixtures.bigPng!.subarray(0, fixtures.bigPng!.length >> 1), 'image/png'),
  '/gzip.png': (_q, s) => s.writeHead(200, { 'content-encoding': 'gzip' }).end(fixtures.png),
  '/cut.png': (_q, s) => {
    s.writeHead(200, { 'content-length': 5000 });
    s.write(fixtures.png!.subarray(0, 100), () => s.destroy());
  },
  '/huge-declared': (_q, s) => {
    s.writeHead(200, { 'content-length': 100 * 1024 * 1024 });
    s.write(fixtures.png!.subarray(0, 100)); // ...the rest would follow
  },
  '/endless': (_q, s) => {
    // No Content-Length; writes until the client goes away.
    s.writeHead(200, { 'content-type': 'image/png' });
    const chunk = Buffer.alloc(64 * 1024, 7);
    fixtures.png!.copy(chunk);
    let stop = false;
    endlessClosed = new Promise((r) => s.on('close', () => ((stop = true), r())));
    const pump = (): void => {
      while (!stop && s.write(chunk)) {
        /* keep writing */
      }
      if (!stop) s.once('drain', pump);
    };
    pump();
  },
  '/drip.png': (_q, s) => {
    s.writeHead(200, { 'content-type': 'image/png', 'content-length': 10_000 });
    s.write(fixtures.png!.subarray(0, 16));
    const t = setInterval(() => s.write('x'), 50);
    s.on('close', () => clearInterval(t));
  },
  '/hang': () => {
    /* never answers */
  },
  '/to': (_q, s, url) => s.writeHead(302, { location: url.searchParams.get('u') ?? '' }).end(),
  '/no-location': (_q, s) => s.writeHead(302).end(),
  '/loop': (_q, s) => s.writeHead(301, { location: '/loop' }).end(),
};

function route(path: string): ((req: http.IncomingMessage, res: http.ServerResponse, url: URL) => void) | undefined {
  const r = /^\/r\/(\d+)$/.exec(path);
  if (r) {
    // /r/n (n >= 1) redirects n times before the PNG, cycling through every redirect status.
    const n = Number(r[1]);
    const status = [301, 302, 303, 307, 308][n % 5]!;
    return (_q, s) => s.writeHead(status, { location: n <= 1 ? '/img/png' : `/r/${n - 1}` }).end();
  }
  const st = /^\/status\/(\d+)$/.exec(path);
  if (st) return (_q, s) => s.writeHead(Number(st[1])).end('nope');
  return routes[path];
}

beforeAll(async () => {
  fixtures.png = await solid(40, 30, { r: 255, g: 0, b: 0 }).png().toBuffer();
  fixtures.jpeg = await solid(41, 31, { r: 0, g: 255, b: 0 }).jpeg().toBuffer();
  fixtures.webp = await solid(42, 32, { r: 0, g: 0, b: 255 }).webp().toBuffer();
  fixtures.gif = await animatedGif();
  fixtures.rotated = await solid(40, 20, { r: 9, g: 9, b: 9 }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
  fixtures.bigPng = await solid(256, 256, { r: 1, g: 2, b: 3 }).png({ compressionLevel: 0 }).toBuffer();
  fixtures.pngBomb = pngHeaderOnly(50_000, 50_000);
  fixtures.gifBomb = handmadeGif({ screenW: 65535, screenH: 65535, frameW: 65535, frameH: 65535 });
  fixtures.webpBomb = await animatedWebp(16_383);
  fixtures.manyFrames = handmadeGif({ screenW: 100, screenH: 100, frameW: 100, frameH: 100, frames: 5_000 });

  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    hits.push({ path: url.pathname, headers: req.headers });
    const handler = route(url.pathname);
    if (handler) handler(req, res, url);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  hits = [];
});

function fetchDev(path: string, extra: Partial<FetchImageOptions> = {}) {
  return fetchImage(`${base}${path}`, { policy: dev, ...extra });
}

/** The ImageFetchError a promise rejects with (fails the test when it resolves). */
async function failure(p: Promise<unknown>): Promise<ImageFetchError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImageFetchError);
  return err as ImageFetchError;
}

describe('fetchImage: served images', () => {
  it.each([
    ['/img/png', 'png', 40, 30],
    ['/img/jpeg', 'jpeg', 41, 31],
    ['/img/webp', 'webp', 42, 32],
    ['/img/gif', 'gif', 20, 10],
  ] as const)('%s is fetched as %s %dx%d, whatever its Content-Type', async (path, format, width, height) => {
    const img = await fetchDev(path);
    expect(img).toMatchObject({ format, width, height, url: `${base}${path}` });
    expect(Buffer.compare(img.bytes, fixtures[format]!)).toBe(0);
    const raw = await decodeImage(img.bytes, { maxPixels: DEFAULT_IMAGE_FETCH_LIMITS.maxPixels, channels: 3 });
    expect([raw.width, raw.height]).toEqual([width, height]);
  });

  it('reports the size after EXIF orientation', async () => {
    expect(await fetchDev('/img/rotated.jpg')).toMatchObject({ format: 'jpeg', width: 20, height: 40 });
  });

  it('reads a chunked body that arrives in pieces', async () => {
    expect(await fetchDev('/img/chunked.png')).toMatchObject({ format: 'png', width: 40, height: 30 });
  });

  it('gathers a body sent one byte per HTTP chunk into the exact bytes', async () => {
    const img = await fetchDev('/img/one-byte-chunks.png');
    expect(img).toMatchObject({ format: 'png', width: 256, height: 256 });
    expect(Buffer.compare(img.bytes, fixtures.bigPng!)).toBe(0);
  });

  it('sends a User-Agent, asks for no content encoding and prefers the decodable formats', async () => {
    await fetchDev('/img/png');
    await fetchDev('/img/png', { userAgent: 'qr-art-test/2' });
    expect(hits.map((h) => h.headers['user-agent'])).toEqual(['qr-art-image-fetch/1', 'qr-art-test/2']);
    expect(hits[0]!.headers['accept-encoding']).toBe('identity');
    expect(hits[0]!.headers.accept).toMatch(/^image\/png,image\/jpeg,image\/webp,image\/gif/);
  });

  it('follows a redirect chain of maxRedirects hops (301, 302, 303, 307, 308), relative Locations included', async () => {
    const img = await fetchDev('/r/3');
    expect(img.url).toBe(`${base}/img/png`);
    expect(hits.map((h) => h.path)).toEqual(['/r/3', '/r/2', '/r/1', '/img/png']);
    await expect(fetchDev('/r/5', { maxRedirects: 5 })).resolves.toMatchObject({ format: 'png' });
  });

  it('accepts a body of exactly maxBytes', async () => {
    await expect(fetchDev('/img/png', { maxBytes: fixtures.png!.length })).resolves.toMatchObject({ format: 'png' });
  });

  it('fetches a truncated PNG whose header is intact; decoding it then fails cleanly', async () => {
    const img = await fetchDev('/truncated-data.png');
    expect(img).toMatchObject({ format: 'png', width: 256, height: 256 });
    await expect(decodeImage(img.bytes, { maxPixels: 1e6 })).rejects.toMatchObject({
      code: 'corrupt_image',
      message: expect.stringMatching(/^could not be decoded: the PNG data is truncated or damaged/),
    });
  });
});

describe('fetchImage: unsafe destinations (allowPrivate false)', () => {
  it.each([
    ['http://10.0.0.1/a.png', 'address 10.0.0.1 is not public: private (10.0.0.0/8)'],
    ['http://169.254.169.254/latest/meta-data/', 'address 169.254.169.254 is not public: cloud metadata endpoint (169.254.169.254)'],
    ['http://[::1]/a.png', 'address ::1 is not public: loopback (::1)'],
    ['http://[::ffff:127.0.0.1]/a.png', 'address ::ffff:7f00:1 is not public: IPv4-mapped IPv6 embedding 127.0.0.1: loopback (127.0.0.0/8)'],
    ['http://localhost/a.png', 'host "localhost" is loopback'],
  ])('%s is refused before any DNS or connection', async (url, reason) => {
    const lookup = fakeLookup({});
    const err = await failure(fetchImage(url, { policy: strict, lookup }));
    expect(err).toMatchObject({ code: 'unsafe_url', transient: false });
    expect(err.message).toBe(`must point to a public address: ${reason}`);
    expect(lookup.calls).toEqual([]);
  });

  it('the local test server by its literal address is refused without a request', async () => {
    const err = await failure(fetchImage(`${base}/img/png`, { policy: strict }));
    expect(err.code).toBe('unsafe_url');
    expect(err.message).toBe('must point to a public address: address 127.0.0.1 is not public: loopback (127.0.0.0/8)');
    expect(hits).toEqual([]);
  });

  it('a name resolving to 10.0.0.1 is refused at connect, without echoing the address', async () => {
    const lookup = fakeLookup({ 'images.customer.test': ['10.0.0.1'] });
    const err = await failure(fetchImage('http://images.customer.test/a.png', { policy: strict, lookup }));
    expect(err).toMatchObject({
      code: 'unsafe_url',
      transient: false,
      message: 'could not be fetched: the host images.customer.test resolves to a non-public address',
    });
    expect(String((err.cause as Error).message)).toMatch(/10\.0\.0\.1/); // kept for the logs
    expect(lookup.calls).toEqual(['images.customer.test']);
  });

  it('a name resolving to both a public and the local address (rebinding) is refused', async () => {
    const lookup = fakeLookup({ 'rebind.test': [PUBLIC_ADDR, '127.0.0.1'] });
    const err = await failure(fetchImage(`http://rebind.test:${port}/img/png`, { policy: strict, lookup }));
    expect(err.code).toBe('unsafe_url');
    expect(hits).toEqual([]);
  });

  describe('redirects are re-checked (first hop: a public name the simulated network routes to the local server)', () => {
    let restore: () => void;
    beforeEach(() => {
      restore = routePublicAddressToLocalhost();
    });
    afterEach(() => restore());

    const lookup = fakeLookup({ 'public.test': [PUBLIC_ADDR], 'internal.test': ['10.0.0.1'], 'meta.test': ['169.254.169.254'] });
    const via = (target: string): string => `http://public.test:${port}/to?u=${encodeURIComponent(target)}`;

    it('control: a public URL redirecting to another public URL is followed', async () => {
      const img = await fetchImage(via(`http://public.test:${port}/img/png`), { policy: strict, lookup });
      expect(img).toMatchObject({ format: 'png', url: `http://public.test:${port}/img/png` });
      expect(hits.map((h) => [h.path, h.headers.host])).toEqual([
        ['/to', `public.test:${port}`],
        ['/img/png', `public.test:${port}`],
      ]);
    });

    it.each([
      ['127.0.0.1', () => `http://127.0.0.1:${port}/img/png`, 'address 127.0.0.1 is not public: loopback (127.0.0.0/8)'],
      ['10.0.0.1', () => 'http://10.0.0.1/a.png', 'address 10.0.0.1 is not public: private (10.0.0.0/8)'],
      ['localhost', () => `http://localhost:${port}/img/png`, 'host "localhost" is loopback'],
      ['[::1]', () => `http://[::1]:${port}/img/png`, 'address ::1 is not public: loopback (::1)'],
    ])('a public URL redirecting to %s is refused without following', async (_name, target, reason) => {
      const err = await failure(fetchImage(via(target()), { policy: strict, lookup }));
      expect(err).toMatchObject({
        code: 'unsafe_url',
        transient: false,
        message: `could not be fetched: the server redirected to a non-public address; ${reason}`,
      });
      expect(hits.map((h) => h.path)).toEqual(['/to']);
    });

    it.each(['internal.test', 'meta.test'])('a public URL redirecting to a name resolving privately (%s) is refused', async (host) => {
      const err = await failure(fetchImage(via(`http://${host}:${port}/img/png`), { policy: strict, lookup }));
      expect(err).toMatchObject({ code: 'unsafe_url', message: `could not be fetched: the host ${host} resolves to a non-public address` });
      expect(hits.map((h) => h.path)).toEqual(['/to']);
    });
  });
});

describe('fetchImage: hostile or broken servers', () => {
  it('more than maxRedirects redirects: too_many_redirects, after exactly maxRedirects follows', async () => {
    const err = await failure(fetchDev('/r/4'));
    expect(err).toMatchObject({
      code: 'too_many_redirects',
      transient: false,
      message: 'could not be fetched: the server redirected more than 3 times',
    });
    expect(hits.map((h) => h.path)).toEqual(['/r/4', '/r/3', '/r/2', '/r/1']);
    expect((await failure(fetchDev('/loop'))).code).toBe('too_many_redirects');
    expect((await failure(fetchDev('/r/1', { maxRedirects: 0 }))).code).toBe('too_many_redirects');
  });

  it.each([
    ['file:///etc/passwd', 'URL scheme file is not allowed (http or https only)'],
    ['ftp://files.example/a.png', 'URL scheme ftp is not allowed (http or https only)'],
    ['gopher://127.0.0.1:6379/_INFO', 'URL scheme gopher is not allowed (http or https only)'],
    ['http://user:secret@images.example/a.png', 'URL must not contain credentials (user:password@)'],
  ])('a redirect to %s is not followed', async (target, reason) => {
    const err = await failure(fetchDev(`/to?u=${encodeURIComponent(target)}`));
    expect(err).toMatchObject({
      code: 'bad_url',
      transient: false,
      message: `could not be fetched: the server redirected to a URL that is not followed; ${reason}`,
    });
    expect(hits).toHaveLength(1);
  });

  it('a redirect without a Location is an http_status error', async () => {
    expect(await failure(fetchDev('/no-location'))).toMatchObject({
      code: 'http_status',
      status: 302,
      message: 'could not be fetched: the server answered HTTP 302 without a Location',
    });
  });

  it.each([
    [404, 'Not Found', false],
    [403, 'Forbidden', false],
    [500, 'Internal Server Error', true],
    [503, 'Service Unavailable', true],
    [429, 'Too Many Requests', true],
    [408, 'Request Timeout', true],
  ])('HTTP %d is an http_status error (%s), transient %s', async (status, name, transient) => {
    const err = await failure(fetchDev(`/status/${status}`));
    expect(err).toMatchObject({
      code: 'http_status',
      status,
      transient,
      message: `could not be fetched: the server answered HTTP ${status} (${name})`,
    });
  });

  it('a server that sends headers then drips bytes hits the total timeout, not retried (it would hold a worker as long again)', async () => {
    const t0 = performance.now();
    const err = await failure(fetchDev('/drip.png', { totalTimeoutMs: 400 }));
    expect(err).toMatchObject({
      code: 'timeout',
      transient: false,
      message: 'could not be fetched: the download did not finish within 400 ms',
    });
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('a server that never answers hits the total timeout, not retried', async () => {
    const err = await failure(fetchDev('/hang', { totalTimeoutMs: 300 }));
    expect(err).toMatchObject({ code: 'timeout', transient: false, message: 'could not be fetched: the download did not finish within 300 ms' });
  });

  it('a host that cannot be reached (DNS or TCP never completing) hits the connect timeout', async () => {
    const never: LookupAllFn = () => new Promise(() => {});
    const t0 = performance.now();
    const err = await failure(fetchImage(`http://stuck.test:${port}/img/png`, { policy: dev, lookup: never, connectTimeoutMs: 200 }));
    expect(err).toMatchObject({ code: 'timeout', transient: true, message: 'could not be fetched: no connection to the server within 200 ms' });
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('aborting rejects with the signal reason', async () => {
    const ac = new AbortController();
    const reason = new Error('request cancelled');
    setTimeout(() => ac.abort(reason), 50);
    await expect(fetchDev('/hang', { signal: ac.signal })).rejects.toBe(reason);
    await expect(fetchDev('/img/png', { signal: ac.signal })).rejects.toBe(reason);
  });

  it('a Content-Length above maxBytes is refused before reading the body', async () => {
    const t0 = performance.now();
    const err = await failure(fetchDev('/huge-declared'));
    expect(err).toMatchObject({ code: 'too_large', transient: false, message: 'is too large: 100 MiB; the limit is 20 MiB' });
    expect(performance.now() - t0).toBeLessThan(1000);
    const small = await failure(fetchDev('/img/png', { maxBytes: fixtures.png!.length - 1 }));
    expect(small.code).toBe('too_large');
  });

  it('a body without Content-Length is cut off once it passes maxBytes, and the connection dropped', async () => {
    const err = await failure(fetchDev('/endless', { maxBytes: 256 * 1024 }));
    expect(err).toMatchObject({ code: 'too_large', transient: false, message: 'is too large: more than the 256 KiB limit' });
    await endlessClosed; // the server sees the client go away (otherwise this test times out)
  });

  it('a text file named .png (served as image/png) is not_an_image', async () => {
    const err = await failure(fetchDev('/text.png'));
    expect(err).toMatchObject({
      code: 'not_an_image',
      transient: false,
      message: 'is not a PNG, JPEG, WebP or GIF image (its content does not start like one of these formats)',
    });
  });

  it('an HTML page is given up on from its first bytes, without waiting for the rest', async () => {
    const t0 = performance.now();
    expect((await failure(fetchDev('/page.html'))).code).toBe('not_an_image');
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('a gzip-encoded body (not asked for) is not_an_image', async () => {
    expect(await failure(fetchDev('/gzip.png'))).toMatchObject({
      code: 'not_an_image',
      message: 'could not be fetched: the server sent a gzip-encoded body, which is not an image file',
    });
  });

  it('a 50,000 x 50,000 PNG header (70 bytes) is too_many_pixels, quickly', async () => {
    expect(fixtures.pngBomb!.length).toBeLessThan(100);
    const t0 = performance.now();
    const err = await failure(fetchDev('/bomb.png'));
    expect(err).toMatchObject({
      code: 'too_many_pixels',
      transient: false,
      message: 'is too large: 50000 x 50000 pixels (2500 megapixels); the limit is 40 megapixels',
    });
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('a GIF bomb (65535 x 65535 frame in a tiny file) is too_many_pixels', async () => {
    expect(fixtures.gifBomb!.length).toBeLessThan(100);
    expect(await failure(fetchDev('/bomb.gif'))).toMatchObject({
      code: 'too_many_pixels',
      message: 'is too large: 65535 x 65535 pixels (4295 megapixels); the limit is 40 megapixels',
    });
  });

  it('an animated WebP with a 16383 x 16383 canvas is too_many_pixels', async () => {
    expect((await failure(fetchDev('/bomb.webp'))).code).toBe('too_many_pixels');
  });

  it('a GIF of 5,000 frames is fetched; only its first frame counts', async () => {
    const img = await fetchDev('/many-frames.gif');
    expect(img).toMatchObject({ format: 'gif', width: 100, height: 100 });
    const raw = await decodeImage(img.bytes, { maxPixels: 100 * 100 });
    expect([raw.width, raw.height]).toEqual([100, 100]);
  });

  it('a PNG cut inside its header is not_an_image', async () => {
    expect(await failure(fetchDev('/truncated-header.png'))).toMatchObject({
      code: 'not_an_image',
      message: 'is not a readable PNG image (its header is damaged)',
    });
  });

  it('a connection dropped mid-body is a transient network error', async () => {
    expect(await failure(fetchDev('/cut.png'))).toMatchObject({
      code: 'network',
      transient: true,
      message: 'could not be fetched: the connection closed before the whole image arrived',
    });
  });

  it('a refused connection and an unknown host are network errors (only the first transient)', async () => {
    const tmp = http.createServer();
    await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', r));
    const closedPort = (tmp.address() as AddressInfo).port;
    await new Promise((r) => tmp.close(r));
    expect(await failure(fetchImage(`http://127.0.0.1:${closedPort}/a.png`, { policy: dev }))).toMatchObject({
      code: 'network',
      transient: true,
      message: 'could not be fetched: the server refused the connection',
    });
    expect(await failure(fetchImage('http://nowhere.test/a.png', { policy: strict, lookup: fakeLookup({}) }))).toMatchObject({
      code: 'network',
      transient: false,
      message: 'could not be fetched: the host name nowhere.test does not resolve',
    });
  });

  it.each([
    ['not a url', 'is not a usable URL: URL is not a valid absolute URL'],
    ['', 'is not a usable URL: URL is empty'],
    ['ftp://files.example/a.png', 'is not a usable URL: URL scheme ftp is not allowed (http or https only)'],
    ['data:image/png;base64,iVBORw0KGgo=', 'is not a usable URL: URL scheme data is not allowed (http or https only)'],
    ['https://user:pw@images.example/a.png', 'is not a usable URL: URL must not contain credentials (user:password@)'],
  ])('%j is a bad_url', async (url, message) => {
    expect(await failure(fetchImage(url, { policy: strict, lookup: fakeLookup({}) }))).toMatchObject({ code: 'bad_url', message });
  });

  it('refuses nonsensical limits as a programming error', async () => {
    await expect(fetchDev('/img/png', { maxBytes: 0 })).rejects.toThrow(RangeError);
    await expect(fetchDev('/img/png', { totalTimeoutMs: Number.NaN })).rejects.toThrow(RangeError);
  });
});
