/**
 * URL checks used by create-body validation.
 *
 * Nothing is resolved here (no DNS in the create path): hosts are judged by what they literally
 * are (an IP address, a localhost name, an internal-use name). Names that resolve to private
 * addresses are caught at delivery time by the webhook sender's DNS check, and so are names
 * that a plain-http webhook (ALLOW_PRIVATE_URLS) gives but that resolve to public addresses.
 */

import { nonPublicReason, parseIPv4 } from '../net/address-policy.ts';

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

/**
 * True when `hostname` (as URL.hostname gives it) is literally a loopback, private,
 * link-local or otherwise non-public address, or a localhost name (localhost, *.localhost).
 * The WHATWG URL parser has already normalized odd IPv4 spellings (0x7f.1, 2130706433). Addresses
 * are judged by the same table the image fetcher and the webhook sender use (net/address-policy.ts),
 * so what they would refuse is refused here, before anything is charged.
 */
export function isNonPublicLiteralHost(hostname: string): boolean {
  // Every trailing dot: 'localhost..' is the sender's localhost too (net/safe-url.ts strips them).
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  if (host === '' || host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIpLiteral(host)) return nonPublicReason(host) !== null;
  return false;
}

/** An IPv4 address or a bracketed IPv6 one, as URL.hostname writes them. */
function isIpLiteral(host: string): boolean {
  return (host.startsWith('[') && host.endsWith(']')) || parseIPv4(host) !== null;
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
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  if (isIpLiteral(host)) return false; // a public IP literal
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
