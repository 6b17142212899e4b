/**
 * Outbound URL safety (SSRF protection) for webhooks and any other user-supplied URL the
 * service fetches (e.g. input images).
 *
 * Three layers:
 *  1. checkUrlSyntax: absolute http(s) URL, no credentials, https when required, and — unless
 *     private destinations are allowed — no literal non-public IP and no "localhost". Where
 *     https is required, allowing private destinations allows plain http to them only: a
 *     public receiver is still reached over TLS (connectionPolicy).
 *  2. resolveSafely: resolves the host (dns.lookup, all addresses) and refuses when ANY
 *     address is non-public.
 *  3. safeLookup: the same check as a `lookup` function for http.request / net.connect /
 *     tls.connect / undici, so the socket connects to exactly the addresses that were checked
 *     (no DNS-rebinding window between check and connect). Note that node does not call
 *     `lookup` for literal IP hosts, so layer 1 (or 2) must run as well.
 */
import { promises as dnsPromises } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { nonPublicReason } from './address-policy.ts';

export interface OutboundPolicy {
  /** Development only: allow loopback/private/link-local destinations (and plain http to them). */
  allowPrivate: boolean;
  /**
   * Every destination must be non-public (a name's every address). connectionPolicy sets it for
   * plain http where https is required: allowPrivate opens private hosts for development, it
   * does not let a payload cross the internet unencrypted.
   */
  privateOnly?: boolean;
}

export interface UrlSyntaxOptions {
  /** Require https; under policy.allowPrivate, plain http is accepted to non-public hosts only. */
  httpsOnly: boolean;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Resolver returning every address of a host name (shape of dns.promises.lookup with all:true). */
export type LookupAllFn = (
  hostname: string,
  options?: { family?: 0 | 4 | 6; hints?: number },
) => Promise<LookupAddress[]>;

export class UnsafeUrlError extends Error {
  readonly code = 'ERR_UNSAFE_URL';
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

export function isUnsafeUrlError(err: unknown): err is UnsafeUrlError {
  return (
    err instanceof UnsafeUrlError ||
    (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ERR_UNSAFE_URL')
  );
}

export const defaultLookupAll: LookupAllFn = (hostname, options) =>
  dnsPromises.lookup(hostname, { all: true, family: options?.family ?? 0, hints: options?.hints ?? 0 });

/** URL.hostname without IPv6 brackets and without a trailing root dot. */
export function urlHost(url: URL): string {
  let h = url.hostname;
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.') && isIP(h) === 0) h = h.slice(0, -1);
  return h;
}

/** "localhost", "foo.localhost" (RFC 6761: always loopback). */
export function isLocalhostName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

const PLAIN_HTTP_RULE = 'plain http is allowed only to loopback or private hosts (ALLOW_PRIVATE_URLS); a public receiver must use https';

/** Why connecting to host (a name or literal IP) is refused under the policy, before any DNS. */
function hostRefusal(host: string, policy: OutboundPolicy): string | null {
  if (policy.privateOnly && !isLocalhostName(host) && isIP(host) !== 0 && nonPublicReason(host) === null) {
    return `address ${host} is public: ${PLAIN_HTTP_RULE}`;
  }
  if (policy.allowPrivate) return null;
  if (isLocalhostName(host)) return `host "${host}" is loopback`;
  if (isIP(host) !== 0 || host.includes('%')) {
    const reason = nonPublicReason(host);
    if (reason !== null) return `address ${host} is not public: ${reason}`;
  }
  return null;
}

export function checkUrlSyntax(
  url: string,
  policy: OutboundPolicy,
  options: UrlSyntaxOptions = { httpsOnly: true },
): UrlCheck {
  if (typeof url !== 'string' || url.trim() === '') return { ok: false, reason: 'URL is empty' };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'URL is not a valid absolute URL' };
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return { ok: false, reason: `URL scheme ${parsed.protocol.replace(/:$/, '')} is not allowed (http or https only)` };
  }
  if (options.httpsOnly && !policy.allowPrivate && parsed.protocol !== 'https:') {
    return { ok: false, reason: 'URL must use https' };
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, reason: 'URL must not contain credentials (user:password@)' };
  }
  const host = urlHost(parsed);
  if (host === '') return { ok: false, reason: 'URL has no host' };
  // Literal hosts are judged here (node connects to them without a lookup); names by safeLookup.
  const refusal = hostRefusal(host, connectionPolicy(parsed, policy, options));
  if (refusal !== null) return { ok: false, reason: refusal };
  return { ok: true, url: parsed };
}

/**
 * The policy a connection to `url` runs under: the given one, plus privateOnly for plain http
 * where https is required (only reachable under allowPrivate). Pass it to safeLookup so that a
 * name's addresses are held to it too.
 */
export function connectionPolicy(url: URL, policy: OutboundPolicy, options: UrlSyntaxOptions): OutboundPolicy {
  return options.httpsOnly && url.protocol === 'http:' ? { ...policy, privateOnly: true } : policy;
}

function normFamily(f: unknown): 0 | 4 | 6 {
  if (f === 4 || f === 'IPv4') return 4;
  if (f === 6 || f === 'IPv6') return 6;
  return 0;
}

/**
 * Resolves `host` and returns all addresses, throwing UnsafeUrlError when any is non-public
 * (unless policy.allowPrivate). DNS failures propagate as the resolver's own error.
 */
export async function resolveHostSafely(
  host: string,
  policy: OutboundPolicy,
  lookup: LookupAllFn = defaultLookupAll,
  options: { family?: 0 | 4 | 6; hints?: number } = {},
): Promise<LookupAddress[]> {
  const refusal = hostRefusal(host, policy);
  if (refusal !== null) throw new UnsafeUrlError(refusal);
  const literal = isIP(host);
  if (literal !== 0) return [{ address: host, family: literal }];
  const addresses = await lookup(host, options);
  if (addresses.length === 0) {
    const err = new Error(`DNS lookup for ${host} returned no addresses`) as NodeJS.ErrnoException;
    err.code = 'ENOTFOUND';
    throw err;
  }
  for (const a of addresses) {
    const reason = nonPublicReason(a.address);
    if (reason !== null && !policy.allowPrivate) {
      throw new UnsafeUrlError(`host ${host} resolves to ${a.address}, which is not public: ${reason}`);
    }
    // Any public address refuses the whole name: the socket may connect to any of them.
    if (reason === null && policy.privateOnly) {
      throw new UnsafeUrlError(`host ${host} resolves to ${a.address}, which is public: ${PLAIN_HTTP_RULE}`);
    }
  }
  return addresses.map((a) => ({ address: a.address, family: normFamily(a.family) || (isIP(a.address) as 4 | 6) }));
}

/** Resolves the URL's host; throws UnsafeUrlError when any resolved address is non-public. */
export async function resolveSafely(
  url: URL,
  policy: OutboundPolicy,
  lookup: LookupAllFn = defaultLookupAll,
): Promise<{ address: string; family: 4 | 6 }> {
  const [first] = await resolveHostSafely(urlHost(url), policy, lookup);
  return { address: (first as LookupAddress).address, family: (first as LookupAddress).family as 4 | 6 };
}

/**
 * A `lookup` for http.request / https.request / net.connect / tls.connect / undici's
 * `connect` option: resolves like dns.lookup but fails with UnsafeUrlError when any
 * address is non-public, so the socket only ever connects to checked addresses.
 * Handles both `all: true` (used by node's happy-eyeballs) and single-address callers.
 */
export function safeLookup(policy: OutboundPolicy, lookup: LookupAllFn = defaultLookupAll): LookupFunction {
  return (hostname, options, callback) => {
    // Tolerate the legacy (hostname, callback) and (hostname, family, callback) forms.
    let opts: LookupOptions = {};
    let cb = callback;
    if (typeof options === 'function') {
      cb = options as unknown as typeof callback;
    } else if (typeof options === 'number') {
      opts = { family: options };
    } else if (options !== null && typeof options === 'object') {
      opts = options;
    }
    const family = normFamily(opts.family);
    const resolveOpts: { family?: 0 | 4 | 6; hints?: number } = { family };
    if (typeof opts.hints === 'number') resolveOpts.hints = opts.hints;
    resolveHostSafely(hostname, policy, lookup, resolveOpts).then(
      (addresses) => {
        const list = family === 0 ? addresses : addresses.filter((a) => a.family === family);
        if (list.length === 0) {
          const err = new Error(`DNS lookup for ${hostname} returned no IPv${family} address`) as NodeJS.ErrnoException;
          err.code = 'ENOTFOUND';
          cb(err, '', 0);
          return;
        }
        if (opts.all) cb(null, list);
        else cb(null, (list[0] as LookupAddress).address, (list[0] as LookupAddress).family);
      },
      (err: NodeJS.ErrnoException) => cb(err, '', 0),
    );
  };
}
