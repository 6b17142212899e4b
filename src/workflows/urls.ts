/**
 * URL checks used by create-body validation.
 *
 * Nothing is resolved here (no DNS in the create path): hosts are judged by what they literally
 * are (an IP address, a localhost name, an internal-use name). Names that resolve to private
 * addresses are caught at delivery time by the webhook sender's DNS check, and so are names
 * that a plain-http webhook (ALLOW_PRIVATE_URLS) gives but that resolve to public addresses.
 */

export type UrlProblem =
  | { kind: 'invalid' } // not an absolute URL
  | { kind: 'scheme'; protocol: string } // scheme not allowed
  | { kind: 'private_host'; host: string } // literal loopback / private / link-local / reserved host
  | { kind: 'public_http'; host: string } // plain http to a host that is, or looks, public
  | { kind: 'credentials' }; // user:password@, which the fetcher and the webhook sender refuse

/** Parses an absolute URL; undefined when `value` is not one. */
export function parseAbsoluteUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.hostname === '' ? undefined : url;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------
// Literal host classification
// ---------------------------------------------------------------------------

/** [first address as a 32-bit number, prefix length] of IPv4 blocks that are not public. */
const IPV4_NON_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (includes cloud metadata 169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

function ipv4ToNumber(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    if (!/^[0-9]{1,3}$/.test(part)) return undefined;
    const v = Number(part);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

const IPV4_BLOCKS = IPV4_NON_PUBLIC.map(([base, prefix]) => {
  const size = 2 ** (32 - prefix);
  const start = ipv4ToNumber(base)!;
  return { start, end: start + size - 1 };
});

function isNonPublicIpv4(n: number): boolean {
  return IPV4_BLOCKS.some((b) => n >= b.start && n <= b.end);
}

/**
 * Parses an IPv6 address in the WHATWG-serialized form (lower-case hex groups, optional '::';
 * the serializer never emits a dotted IPv4 tail) into its 8 groups.
 */
function parseIpv6(text: string): number[] | undefined {
  const groupsOf = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const halves = text.split('::');
  if (halves.length === 1) {
    const g = groupsOf(text);
    return g && g.length === 8 ? g : undefined;
  }
  if (halves.length !== 2) return undefined;
  const a = groupsOf(halves[0]!);
  const b = groupsOf(halves[1]!);
  if (!a || !b || a.length + b.length > 7) return undefined;
  return [...a, ...new Array<number>(8 - a.length - b.length).fill(0), ...b];
}

function isNonPublicIpv6(g: number[]): boolean {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  const embeddedV4 = g6 * 65536 + g7;
  // ::/96 covers :: (unspecified), ::1 (loopback) and the deprecated IPv4-compatible form.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return true;
  // ::ffff:0:0/96 IPv4-mapped: judge the embedded IPv4 address.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return isNonPublicIpv4(embeddedV4);
  // 64:ff9b::/96 NAT64: judge the embedded IPv4 address.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isNonPublicIpv4(embeddedV4);
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g0 & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((g0 & 0xff00) === 0xff00) return true; // ff00::/8 multicast
  if (g0 === 0x2001 && g1 === 0x0db8) return true; // 2001:db8::/32 documentation
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return true; // 100::/64 discard
  return false;
}

/**
 * True when `hostname` (as URL.hostname gives it) is literally a loopback, private,
 * link-local or otherwise non-public address, or a localhost name (localhost, *.localhost).
 * The WHATWG URL parser has already normalized odd IPv4 spellings (0x7f.1, 2130706433).
 */
export function isNonPublicLiteralHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === '' || host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host.startsWith('[') && host.endsWith(']')) {
    const groups = parseIpv6(host.slice(1, -1));
    return groups === undefined ? true : isNonPublicIpv6(groups);
  }
  const v4 = ipv4ToNumber(host);
  return v4 !== undefined && isNonPublicIpv4(v4);
}

/**
 * Suffixes of names that no public receiver has: special-use and private-use domains that are
 * never delegated on the internet, and Kubernetes' service names.
 *   localhost (RFC 6761), local (mDNS, RFC 6762; Kubernetes' cluster.local), internal (reserved
 *   by ICANN for private use; host.docker.internal), home.arpa (RFC 8375), test (RFC 6761),
 *   svc (a Kubernetes service named without the cluster domain: receiver.default.svc).
 */
const INTERNAL_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'test', 'svc'] as const;

/**
 * True when `hostname` (as URL.hostname gives it) is not a public receiver on its face: a
 * literal non-public address or localhost name (isNonPublicLiteralHost), a single label (found
 * through search domains or a hosts file: a docker compose service, `receiver`), or a name
 * under INTERNAL_SUFFIXES. A public IP literal, or a name under any other suffix, is public-looking
 * (even when an internal DNS zone maps it to a private address: that cannot be told without
 * resolving, which the create path does not do).
 */
export function isInternalHost(hostname: string): boolean {
  if (isNonPublicLiteralHost(hostname)) return true;
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host.startsWith('[') || ipv4ToNumber(host) !== undefined) return false; // a public IP literal
  if (!host.includes('.')) return true;
  return INTERNAL_SUFFIXES.some((suffix) => host.endsWith(`.${suffix}`));
}

export interface CheckUrlOptions {
  /**
   * Plain http only to an internal host (isInternalHost): ALLOW_PRIVATE_URLS opens private
   * receivers for development, not unencrypted deliveries to public ones.
   */
  httpOnlyToInternalHosts?: boolean;
}

/**
 * Checks a URL string against the allowed schemes and, when `rejectNonPublicHosts`,
 * against literal non-public hosts. Returns undefined when the URL is acceptable.
 */
export function checkUrl(
  value: string,
  allowedProtocols: readonly string[],
  rejectNonPublicHosts: boolean,
  options: CheckUrlOptions = {},
): UrlProblem | undefined {
  const url = parseAbsoluteUrl(value);
  if (!url) return { kind: 'invalid' };
  if (!allowedProtocols.includes(url.protocol)) return { kind: 'scheme', protocol: url.protocol };
  if (url.username !== '' || url.password !== '') return { kind: 'credentials' };
  if (rejectNonPublicHosts && isNonPublicLiteralHost(url.hostname)) return { kind: 'private_host', host: url.hostname };
  if (options.httpOnlyToInternalHosts && url.protocol === 'http:' && !isInternalHost(url.hostname)) {
    return { kind: 'public_http', host: url.hostname };
  }
  return undefined;
}
