/**
 * Which IP addresses an outbound request (webhook, user-supplied image URL, ...) may reach.
 *
 * IPv4: every address is public except the special-purpose ranges listed below.
 * IPv6: only global unicast (2000::/3) is public, minus special blocks inside it; addresses
 * that embed an IPv4 address (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16)
 * are judged by the embedded IPv4 address.
 *
 * Strings that are not a valid IP address (including non-canonical IPv4 forms such as
 * "127.1" or "0x7f.0.0.1", and IPv6 with a zone id) are never public.
 */
import { isIPv4, isIPv6 } from 'node:net';

interface V4Range {
  base: number;
  prefix: number;
  reason: string;
}

function v4(cidr: string, reason: string): V4Range {
  const [addr, len] = cidr.split('/') as [string, string];
  const base = parseIPv4(addr);
  if (base === null) throw new Error(`bad range ${cidr}`);
  return { base, prefix: Number(len), reason };
}

/** IANA IPv4 special-purpose registry entries that must not be reached (plus multicast/reserved). */
const V4_BLOCKED: readonly V4Range[] = [
  v4('0.0.0.0/8', '"this network" (0.0.0.0/8)'),
  v4('10.0.0.0/8', 'private (10.0.0.0/8)'),
  v4('100.64.0.0/10', 'carrier-grade NAT (100.64.0.0/10)'),
  v4('127.0.0.0/8', 'loopback (127.0.0.0/8)'),
  v4('169.254.169.254/32', 'cloud metadata endpoint (169.254.169.254)'),
  v4('169.254.0.0/16', 'link-local (169.254.0.0/16)'),
  v4('172.16.0.0/12', 'private (172.16.0.0/12)'),
  v4('192.0.0.0/24', 'IETF protocol assignments (192.0.0.0/24)'),
  v4('192.0.2.0/24', 'documentation (192.0.2.0/24)'),
  v4('192.88.99.0/24', 'deprecated 6to4 relay anycast (192.88.99.0/24)'),
  v4('192.168.0.0/16', 'private (192.168.0.0/16)'),
  v4('198.18.0.0/15', 'benchmarking (198.18.0.0/15)'),
  v4('198.51.100.0/24', 'documentation (198.51.100.0/24)'),
  v4('203.0.113.0/24', 'documentation (203.0.113.0/24)'),
  v4('224.0.0.0/4', 'multicast (224.0.0.0/4)'),
  v4('255.255.255.255/32', 'broadcast (255.255.255.255)'),
  v4('240.0.0.0/4', 'reserved (240.0.0.0/4)'),
];

interface V6Range {
  bytes: Uint8Array;
  prefix: number;
  reason: string;
}

function v6(cidr: string, reason: string): V6Range {
  const [addr, len] = cidr.split('/') as [string, string];
  const bytes = parseIPv6(addr);
  if (bytes === null) throw new Error(`bad range ${cidr}`);
  return { bytes, prefix: Number(len), reason };
}

const V6_MAPPED = v6('::ffff:0:0/96', 'IPv4-mapped');
const V6_NAT64 = v6('64:ff9b::/96', 'NAT64');
const V6_6TO4 = v6('2002::/16', '6to4');
const V6_GLOBAL_UNICAST = v6('2000::/3', 'global unicast');

/** Blocks outside 2000::/3 — only used to give a precise reason. */
const V6_NAMED: readonly V6Range[] = [
  v6('::/128', 'unspecified address (::)'),
  v6('::1/128', 'loopback (::1)'),
  v6('::/96', 'deprecated IPv4-compatible IPv6 (::/96)'),
  v6('64:ff9b:1::/48', 'local-use NAT64 (64:ff9b:1::/48)'),
  v6('100::/64', 'discard-only (100::/64)'),
  v6('fc00::/7', 'unique-local (fc00::/7)'),
  v6('fe80::/10', 'link-local (fe80::/10)'),
  v6('fec0::/10', 'deprecated site-local (fec0::/10)'),
  v6('ff00::/8', 'multicast (ff00::/8)'),
];

/** Non-public blocks inside 2000::/3. */
const V6_BLOCKED_IN_GLOBAL: readonly V6Range[] = [
  v6('2001:db8::/32', 'documentation (2001:db8::/32)'),
  v6('2001::/32', 'Teredo (2001::/32)'),
  v6('2001::/23', 'IETF protocol assignments (2001::/23)'),
  v6('3fff::/20', 'documentation (3fff::/20)'),
];

/** Parses dotted-quad IPv4 (strict, as node:net isIPv4) to an unsigned 32-bit number. */
export function parseIPv4(ip: string): number | null {
  if (!isIPv4(ip)) return null;
  const parts = ip.split('.');
  let n = 0;
  for (const p of parts) n = n * 256 + Number(p);
  return n >>> 0;
}

/** Parses an IPv6 address (no zone id) into 16 bytes. */
export function parseIPv6(ip: string): Uint8Array | null {
  if (ip.includes('%') || !isIPv6(ip)) return null;
  const out = new Uint8Array(16);
  const toWords = (part: string): number[] | null => {
    if (part === '') return [];
    const words: number[] = [];
    const groups = part.split(':');
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i] as string;
      if (g.includes('.')) {
        if (i !== groups.length - 1) return null;
        const n = parseIPv4(g);
        if (n === null) return null;
        words.push(n >>> 16, n & 0xffff);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
        words.push(parseInt(g, 16));
      }
    }
    return words;
  };
  const halves = ip.split('::');
  if (halves.length > 2) return null;
  const head = toWords(halves[0] as string);
  const tail = halves.length === 2 ? toWords(halves[1] as string) : [];
  if (head === null || tail === null) return null;
  if (halves.length === 2 && head.length + tail.length > 7) return null;
  const words =
    halves.length === 2 ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  if (words.length !== 8) return null;
  words.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 0xff;
  });
  return out;
}

function inV4(n: number, r: V4Range): boolean {
  if (r.prefix === 0) return true;
  const mask = r.prefix === 32 ? 0xffffffff : (~(0xffffffff >>> r.prefix)) >>> 0;
  return ((n & mask) >>> 0) === ((r.base & mask) >>> 0);
}

function inV6(b: Uint8Array, r: V6Range): boolean {
  let bits = r.prefix;
  for (let i = 0; i < 16 && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((b[i] as number) & mask) !== ((r.bytes[i] as number) & mask)) return false;
  }
  return true;
}

function v4FromBytes(b: Uint8Array, offset: number): number {
  return (
    (((b[offset] as number) << 24) |
      ((b[offset + 1] as number) << 16) |
      ((b[offset + 2] as number) << 8) |
      (b[offset + 3] as number)) >>>
    0
  );
}

function v4ToString(n: number): string {
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}

function v4Reason(n: number): string | null {
  for (const r of V4_BLOCKED) if (inV4(n, r)) return r.reason;
  return null;
}

/**
 * Why `ip` is not a public address, or null when it is public.
 * Accepts an IPv6 address with or without surrounding brackets.
 */
export function nonPublicReason(ip: string): string | null {
  let s = ip.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const n4 = parseIPv4(s);
  if (n4 !== null) return v4Reason(n4);
  if (s.includes('%')) return 'IPv6 address with a zone id (link-scoped)';
  const b = parseIPv6(s);
  if (b === null) return 'not a valid IP address';

  const embedded = (kind: string, offset: number): string | null => {
    const e = v4FromBytes(b, offset);
    const r = v4Reason(e);
    return r === null ? null : `${kind} IPv6 embedding ${v4ToString(e)}: ${r}`;
  };
  if (inV6(b, V6_MAPPED)) return embedded('IPv4-mapped', 12);
  if (inV6(b, V6_NAT64)) return embedded('NAT64', 12);
  if (inV6(b, V6_6TO4)) return embedded('6to4', 2);
  if (!inV6(b, V6_GLOBAL_UNICAST)) {
    for (const r of V6_NAMED) if (inV6(b, r)) return r.reason;
    return 'not IPv6 global unicast (outside 2000::/3)';
  }
  for (const r of V6_BLOCKED_IN_GLOBAL) if (inV6(b, r)) return r.reason;
  return null;
}

/** True when `ip` is a syntactically valid IPv4/IPv6 address on the public internet. */
export function isPublicAddress(ip: string): boolean {
  return nonPublicReason(ip) === null;
}
