import { describe, expect, it } from 'vitest';
import { isPublicAddress, nonPublicReason, parseIPv6 } from '../../src/net/address-policy.ts';

const refused: string[] = [
  // IPv4
  '0.0.0.0',
  '0.1.2.3',
  '10.0.0.1',
  '10.255.255.255',
  '100.64.0.1',
  '100.127.255.254',
  '127.0.0.1',
  '127.255.255.254',
  '169.254.169.254',
  '169.254.0.1',
  '172.16.0.1',
  '172.31.255.255',
  '192.0.0.8',
  '192.0.2.1',
  '192.88.99.1',
  '192.168.1.1',
  '198.18.0.1',
  '198.19.255.255',
  '198.51.100.7',
  '203.0.113.9',
  '224.0.0.1',
  '239.255.255.250',
  '240.0.0.1',
  '255.255.255.255',
  // IPv6
  '::',
  '::1',
  '[::1]',
  '0:0:0:0:0:0:0:1',
  'fe80::1',
  'febf:ffff::1',
  'fc00::1',
  'fd12:3456:789a::1',
  'fec0::1',
  'ff02::1',
  'ff05::1:3',
  '100::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.1.2.3',
  '::ffff:169.254.169.254',
  '::ffff:192.168.0.1',
  '0:0:0:0:0:ffff:a9fe:a9fe',
  '::127.0.0.1',
  '::ffff:0:10.0.0.1',
  '64:ff9b::10.0.0.1',
  '64:ff9b::7f00:1',
  '64:ff9b::169.254.169.254',
  '64:ff9b:1::8.8.8.8',
  '2002:7f00:1::',
  '2002:c0a8:101::1',
  '2001:db8::1',
  '2001::1',
  '2001:2::1',
  '3fff::1',
  'fe80::1%eth0',
  // not IP addresses at all, or non-canonical forms
  '',
  'localhost',
  'example.com',
  '127.1',
  '0x7f.0.0.1',
  '2130706433',
  '017700000001',
  '1.2.3',
  '256.1.1.1',
  '1.2.3.4.5',
  '::ffff:999.0.0.1',
  '1:2:3:4:5:6:7:8:9',
];

const allowed: string[] = [
  '1.1.1.1',
  '8.8.8.8',
  '93.184.216.34',
  '100.63.255.255',
  '100.128.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '169.253.255.255',
  '192.0.1.1',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
  '11.0.0.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001:81c::200e',
  '[2606:4700:4700::1111]',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '64:ff9b::8.8.8.8',
  '2002:808:808::1',
];

describe('isPublicAddress', () => {
  it.each(refused)('refuses %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
    expect(nonPublicReason(ip)).toEqual(expect.any(String));
  });

  it.each(allowed)('allows %s', (ip) => {
    expect(nonPublicReason(ip)).toBeNull();
    expect(isPublicAddress(ip)).toBe(true);
  });

  it('explains why', () => {
    expect(nonPublicReason('169.254.169.254')).toMatch(/metadata/);
    expect(nonPublicReason('::ffff:127.0.0.1')).toMatch(/IPv4-mapped.*127\.0\.0\.1.*loopback/);
    expect(nonPublicReason('64:ff9b::10.0.0.1')).toMatch(/NAT64.*private/);
    expect(nonPublicReason('fe80::1')).toMatch(/link-local/);
  });
});

describe('parseIPv6', () => {
  it('expands compressed and dotted forms', () => {
    expect(Array.from(parseIPv6('::1') ?? [])).toEqual([...new Array(15).fill(0), 1]);
    expect(Array.from(parseIPv6('::ffff:1.2.3.4') ?? [])).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect(Array.from(parseIPv6('2001:db8::8:800:200c:417a') ?? [])).toEqual([
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0x08, 0x08, 0, 0x20, 0x0c, 0x41, 0x7a,
    ]);
    expect(parseIPv6('1.2.3.4')).toBeNull();
    expect(parseIPv6('1::2::3')).toBeNull();
  });
});
