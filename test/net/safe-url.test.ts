import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkUrlSyntax,
  connectionPolicy,
  isUnsafeUrlError,
  resolveHostSafely,
  resolveSafely,
  safeLookup,
  UnsafeUrlError,
  type LookupAllFn,
} from '../../src/net/safe-url.ts';
import { fakeLookup } from '../helpers/fake-dns.ts';

const strict = { allowPrivate: false };
const dev = { allowPrivate: true };


describe('checkUrlSyntax', () => {
  it.each([
    ['https://example.com/hook', strict],
    ['https://example.com:8443/hook?x=1', strict],
    ['https://93.184.216.34/hook', strict],
    ['https://[2606:4700:4700::1111]/hook', strict],
    ['http://127.0.0.1:3000/hook', dev],
    ['http://localhost:3000/hook', dev],
  ])('accepts %s', (url, policy) => {
    const r = checkUrlSyntax(url, policy, { httpsOnly: true });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.url.href).toBe(new URL(url).href);
  });

  it.each([
    ['', /empty/],
    ['/relative/path', /absolute/],
    ['not a url', /absolute/],
    ['ftp://example.com/x', /scheme ftp/],
    ['file:///etc/passwd', /scheme file/],
    ['javascript:alert(1)', /scheme javascript/],
    ['http://example.com/hook', /https/],
    ['https://user:pass@example.com/hook', /credentials/],
    ['https://user@example.com/hook', /credentials/],
    ['https://localhost/hook', /loopback/],
    ['https://LOCALHOST./hook', /loopback/],
    ['https://api.localhost/hook', /loopback/],
    ['https://127.0.0.1/hook', /not public.*loopback/],
    ['https://127.1/hook', /not public/], // WHATWG URL normalises to 127.0.0.1
    ['https://0x7f000001/hook', /not public/],
    ['https://2130706433/hook', /not public/],
    ['https://0.0.0.0/hook', /not public/],
    ['https://10.0.0.5/hook', /private/],
    ['https://192.168.1.10/hook', /private/],
    ['https://169.254.169.254/latest/meta-data', /metadata/],
    ['https://[::1]/hook', /loopback/],
    ['https://[::ffff:127.0.0.1]/hook', /IPv4-mapped/],
    ['https://[::ffff:a9fe:a9fe]/hook', /metadata/],
    ['https://[fe80::1]/hook', /link-local/],
    ['https://[fd00::1]/hook', /unique-local/],
    ['https://[64:ff9b::a00:1]/hook', /NAT64/],
  ])('refuses %s', (url, reason) => {
    const r = checkUrlSyntax(url, strict, { httpsOnly: true });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it('allows plain http when httpsOnly is false (still refusing private hosts)', () => {
    expect(checkUrlSyntax('http://example.com/a.png', strict, { httpsOnly: false }).ok).toBe(true);
    expect(checkUrlSyntax('http://10.0.0.1/a.png', strict, { httpsOnly: false }).ok).toBe(false);
  });

  it('under allowPrivate, accepts plain http to a literal public address only where https is not required', () => {
    for (const url of ['http://93.184.216.34/hook', 'http://[2606:4700:4700::1111]/hook']) {
      const r = checkUrlSyntax(url, dev, { httpsOnly: true });
      expect(r.ok, url).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(/is public: plain http is allowed only to loopback or private hosts/);
      // An image URL (httpsOnly false) may be plain http anywhere; the spec allows it.
      expect(checkUrlSyntax(url, dev, { httpsOnly: false }).ok, url).toBe(true);
    }
    // Names pass here: their addresses are judged when the connection resolves them.
    expect(checkUrlSyntax('http://hooks.example.com/hook', dev, { httpsOnly: true }).ok).toBe(true);
    expect(checkUrlSyntax('https://93.184.216.34/hook', dev, { httpsOnly: true }).ok).toBe(true);
  });
});

describe('connectionPolicy', () => {
  it('holds plain http to private destinations only where https is required', () => {
    expect(connectionPolicy(new URL('http://hooks.test/'), dev, { httpsOnly: true })).toEqual({ allowPrivate: true, privateOnly: true });
    expect(connectionPolicy(new URL('https://hooks.test/'), dev, { httpsOnly: true })).toBe(dev);
    expect(connectionPolicy(new URL('http://hooks.test/a.png'), dev, { httpsOnly: false })).toBe(dev);
  });
});

describe('resolveHostSafely with privateOnly (plain http under allowPrivate)', () => {
  const privateOnly = { allowPrivate: true, privateOnly: true };
  const lookup = fakeLookup({
    'receiver.test': ['127.0.0.1'],
    'lan.test': ['192.168.1.20', 'fd00::5'],
    'public.example': ['93.184.216.34'],
    'mixed.example': ['10.0.0.7', '93.184.216.34'],
  });

  it('accepts a name whose every address is private or loopback, and localhost without DNS', async () => {
    await expect(resolveHostSafely('receiver.test', privateOnly, lookup)).resolves.toEqual([{ address: '127.0.0.1', family: 4 }]);
    await expect(resolveHostSafely('lan.test', privateOnly, lookup)).resolves.toHaveLength(2);
    await expect(resolveHostSafely('localhost', privateOnly, fakeLookup({ localhost: ['127.0.0.1'] }))).resolves.toBeTruthy();
    await expect(resolveHostSafely('10.1.2.3', privateOnly, lookup)).resolves.toEqual([{ address: '10.1.2.3', family: 4 }]);
  });

  it.each(['public.example', 'mixed.example'])('refuses %s: an address is public', async (host) => {
    const p = resolveHostSafely(host, privateOnly, lookup);
    await expect(p).rejects.toBeInstanceOf(UnsafeUrlError);
    await expect(p).rejects.toThrow(/93\.184\.216\.34, which is public: plain http is allowed only to loopback or private hosts/);
  });

  it('refuses a literal public address without DNS', async () => {
    const l = fakeLookup({});
    await expect(resolveHostSafely('8.8.8.8', privateOnly, l)).rejects.toThrow(/address 8\.8\.8\.8 is public/);
    expect(l.calls).toEqual([]);
  });
});

describe('resolveSafely', () => {
  const lookup = fakeLookup({
    'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'sneaky.example': ['10.0.0.7'],
    'mixed.example': ['93.184.216.34', '127.0.0.1'],
    'metadata.example': ['169.254.169.254'],
    'mapped.example': ['::ffff:127.0.0.1'],
    'v6local.example': ['2606:4700::1', 'fd00::5'],
    localhost: ['127.0.0.1'],
  });

  it('returns the first checked address for a public name', async () => {
    await expect(resolveSafely(new URL('https://public.example/x'), strict, lookup)).resolves.toEqual({
      address: '93.184.216.34',
      family: 4,
    });
  });

  it.each(['sneaky.example', 'mixed.example', 'metadata.example', 'mapped.example', 'v6local.example'])(
    'refuses %s (resolves to a non-public address)',
    async (host) => {
      const p = resolveSafely(new URL(`https://${host}/x`), strict, lookup);
      await expect(p).rejects.toBeInstanceOf(UnsafeUrlError);
      await expect(p).rejects.toThrow(new RegExp(`host ${host.replace('.', '\\.')} resolves to .* not public`));
    },
  );

  it('allows private addresses when policy.allowPrivate', async () => {
    await expect(resolveSafely(new URL('https://sneaky.example/x'), dev, lookup)).resolves.toEqual({
      address: '10.0.0.7',
      family: 4,
    });
  });

  it('judges literal IPs without DNS', async () => {
    const l = fakeLookup({});
    await expect(resolveSafely(new URL('https://8.8.8.8/'), strict, l)).resolves.toEqual({ address: '8.8.8.8', family: 4 });
    await expect(resolveSafely(new URL('https://[2606:4700:4700::1111]/'), strict, l)).resolves.toEqual({
      address: '2606:4700:4700::1111',
      family: 6,
    });
    await expect(resolveSafely(new URL('https://127.0.0.1/'), strict, l)).rejects.toBeInstanceOf(UnsafeUrlError);
    await expect(resolveSafely(new URL('https://[::1]/'), strict, l)).rejects.toBeInstanceOf(UnsafeUrlError);
    expect(l.calls).toEqual([]);
  });

  it('treats localhost as loopback without asking DNS', async () => {
    const l = fakeLookup({ localhost: ['93.184.216.34'] });
    await expect(resolveSafely(new URL('https://localhost/'), strict, l)).rejects.toThrow(/loopback/);
    expect(l.calls).toEqual([]);
  });

  it('propagates DNS failures as non-UnsafeUrlError', async () => {
    const p = resolveSafely(new URL('https://nope.example/'), strict, lookup);
    await expect(p).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(p).rejects.not.toBeInstanceOf(UnsafeUrlError);
  });

  it('uses the real resolver by default (localhost literal refused, 127.0.0.1 allowed in dev)', async () => {
    await expect(resolveSafely(new URL('http://127.0.0.1/'), dev)).resolves.toEqual({ address: '127.0.0.1', family: 4 });
    await expect(resolveSafely(new URL('https://localhost/'), strict)).rejects.toBeInstanceOf(UnsafeUrlError);
  });
});

describe('safeLookup', () => {
  function call(
    fn: ReturnType<typeof safeLookup>,
    host: string,
    options: { all?: boolean; family?: number },
  ): Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family: unknown }> {
    return new Promise((resolve) => fn(host, options, (err, address, family) => resolve({ err, address, family })));
  }

  const lookup = fakeLookup({
    'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'sneaky.example': ['192.168.0.10'],
  });

  it('answers single-address and all:true callers', async () => {
    const fn = safeLookup(strict, lookup);
    expect(await call(fn, 'public.example', {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await call(fn, 'public.example', { family: 6 })).toEqual({
      err: null,
      address: '2606:2800:220:1:248:1893:25c8:1946',
      family: 6,
    });
    const all = await call(fn, 'public.example', { all: true });
    expect(all.err).toBeNull();
    expect(all.address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ]);
  });

  it('fails with UnsafeUrlError for private results', async () => {
    const r = await call(safeLookup(strict, lookup), 'sneaky.example', { all: true });
    expect(r.err).toBeInstanceOf(UnsafeUrlError);
    expect(isUnsafeUrlError(r.err)).toBe(true);
    expect((await call(safeLookup(dev, lookup), 'sneaky.example', {})).address).toBe('192.168.0.10');
  });

  describe('as the lookup option of http.request', () => {
    let server: http.Server;
    let port: number;
    let hits = 0;
    beforeAll(async () => {
      server = http.createServer((_req, res) => {
        hits++;
        res.end('ok');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });

    function get(host: string, policy: { allowPrivate: boolean }, l: LookupAllFn): Promise<number> {
      return new Promise((resolve, reject) => {
        const req = http.request({ host, port, path: '/', agent: false, lookup: safeLookup(policy, l) }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    }

    it('connects to the address the lookup checked', async () => {
      const l = fakeLookup({ 'hook.test': ['127.0.0.1'] });
      await expect(get('hook.test', dev, l)).resolves.toBe(200);
      expect(hits).toBe(1);
    });

    it('refuses at connect time when the name now resolves privately (DNS rebinding)', async () => {
      // First answer (used by an up-front check) is public, the second (at connect) is loopback.
      let n = 0;
      const rebinding: LookupAllFn = async () => [{ address: n++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
      await expect(resolveSafely(new URL('https://rebind.test/'), strict, rebinding)).resolves.toBeTruthy();
      const before = hits;
      await expect(get('rebind.test', strict, rebinding)).rejects.toBeInstanceOf(UnsafeUrlError);
      expect(hits).toBe(before);
    });
  });
});
