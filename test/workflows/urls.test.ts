import { describe, expect, it } from 'vitest';
import { checkUrl, isInternalHost, isNonPublicLiteralHost } from '../../src/workflows/urls.ts';

const hostOf = (url: string) => new URL(url).hostname;

describe('literal host classification', () => {
  it('flags loopback, private, link-local, CGNAT, multicast and reserved IPv4', () => {
    for (const ip of ['127.0.0.1', '10.0.0.0', '10.255.255.255', '172.16.0.0', '172.31.255.255', '192.168.0.1', '169.254.0.1', '100.64.0.0', '100.127.255.255', '0.0.0.0', '224.0.0.251', '240.0.0.1', '192.0.2.1']) {
      expect(isNonPublicLiteralHost(ip)).toBe(true);
    }
  });

  it('lets public IPv4 through, including neighbours of private blocks', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '9.255.255.255', '11.0.0.0', '172.15.255.255', '172.32.0.0', '100.63.255.255', '100.128.0.0', '169.253.255.255', '223.255.255.255']) {
      expect(isNonPublicLiteralHost(ip)).toBe(false);
    }
  });

  it('flags non-public IPv6 as the URL parser serializes it', () => {
    for (const url of ['http://[::1]/', 'http://[::]/', 'http://[fe80::abcd]/', 'http://[fc00::1]/', 'http://[fdff::1]/', 'http://[ff02::1]/',
      'http://[::ffff:192.168.0.1]/', 'http://[64:ff9b::10.0.0.1]/', 'http://[2001:db8::1]/', 'http://[::127.0.0.1]/']) {
      expect(isNonPublicLiteralHost(hostOf(url))).toBe(true);
    }
    for (const url of ['http://[2606:4700::1111]/', 'http://[::ffff:8.8.8.8]/', 'http://[64:ff9b::8.8.8.8]/', 'http://[2001:4860:4860::8888]/']) {
      expect(isNonPublicLiteralHost(hostOf(url))).toBe(false);
    }
  });

  it('flags localhost names and leaves other names to the delivery-time DNS check', () => {
    for (const host of ['localhost', 'LocalHost', 'localhost.', 'localhost..', 'a.b.localhost...']) expect(isNonPublicLiteralHost(host)).toBe(true);
    for (const host of ['example.com', 'localhost.example.com', 'mylocalhost', '10.0.0.1.nip.io']) expect(isNonPublicLiteralHost(host)).toBe(false);
  });

  it('sees through the odd IPv4 spellings that the URL parser normalizes', () => {
    for (const url of ['http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://127.1/']) {
      expect(isNonPublicLiteralHost(hostOf(url))).toBe(true);
    }
  });
});

describe('checkUrl', () => {
  it('reports the kind of problem', () => {
    expect(checkUrl('https://example.com', ['https:'], true)).toBeUndefined();
    expect(checkUrl('nope', ['https:'], true)).toEqual({ kind: 'invalid' });
    expect(checkUrl('http://example.com', ['https:'], true)).toEqual({ kind: 'scheme', protocol: 'http:' });
    expect(checkUrl('https://127.0.0.1', ['https:'], true)).toEqual({ kind: 'private_host', host: '127.0.0.1' });
    expect(checkUrl('https://127.0.0.1', ['https:'], false)).toBeUndefined();
  });
});

describe('plain http only to internal hosts (ALLOW_PRIVATE_URLS)', () => {
  const dev = (url: string) => checkUrl(url, ['https:', 'http:'], false, { httpOnlyToInternalHosts: true });

  it('accepts http to literal private and loopback addresses and localhost names', () => {
    for (const url of ['http://127.0.0.1:3000/hook', 'http://10.0.0.5/hook', 'http://192.168.1.20/hook', 'http://[::1]:8080/hook', 'http://localhost:3000/hook', 'http://api.localhost/hook']) {
      expect(dev(url), url).toBeUndefined();
    }
  });

  it('accepts http to names no public receiver has: single labels and internal-use suffixes', () => {
    for (const url of ['http://receiver:8080/hook', 'http://host.docker.internal:3000/hook', 'http://hooks.default.svc/hook', 'http://hooks.default.svc.cluster.local/hook',
      'http://printer.local/hook', 'http://nas.home.arpa/hook', 'http://receiver.test/hook', 'http://RECEIVER.TEST./hook']) {
      expect(dev(url), url).toBeUndefined();
    }
  });

  it('refuses http to public IP literals and to names under public suffixes, naming the host', () => {
    for (const [url, host] of [['http://8.8.8.8/hook', '8.8.8.8'], ['http://0x08080808/hook', '8.8.8.8'], ['http://[2606:4700::1111]/hook', '[2606:4700::1111]'],
      ['http://hooks.example.com/hook', 'hooks.example.com'], ['http://localhost.example.com/hook', 'localhost.example.com'], ['http://10.0.0.1.nip.io/hook', '10.0.0.1.nip.io'],
      ['http://internal.example.org/hook', 'internal.example.org']]) {
      expect(dev(url!), url).toEqual({ kind: 'public_http', host });
    }
  });

  it('leaves https alone, public or private, and is off unless asked', () => {
    for (const url of ['https://hooks.example.com/hook', 'https://8.8.8.8/hook', 'https://127.0.0.1/hook']) expect(dev(url)).toBeUndefined();
    expect(checkUrl('http://hooks.example.com/hook', ['https:', 'http:'], false)).toBeUndefined();
  });

  it('classifies hosts as URL.hostname gives them', () => {
    expect(isInternalHost('receiver')).toBe(true);
    expect(isInternalHost('a.b.internal')).toBe(true);
    expect(isInternalHost('internal')).toBe(true);
    expect(isInternalHost('example.internalx')).toBe(false);
    expect(isInternalHost('93.184.216.34')).toBe(false);
    expect(isInternalHost('[fd00::1]')).toBe(true);
  });
});
