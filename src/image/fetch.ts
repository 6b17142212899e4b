/**
 * Fetch a client-supplied image URL (qrImage, the outpainting `image`) without letting the
 * client steer us into the internal network or exhaust memory.
 *
 *  - http(s) only; every hop (the URL and each redirect Location) is checked by checkUrlSyntax
 *    and connected through safeLookup, so the address checked is the address connected to.
 *  - Redirects are followed by hand, at most maxRedirects.
 *  - A connect timeout (DNS + TCP) and a total deadline over all hops, headers and body.
 *  - A byte cap enforced on Content-Length and while streaming.
 *  - The content is judged by its magic bytes and its header (pixel count) before anyone decodes it.
 *
 * Messages are written to follow a field name, which the caller adds:
 * `${field} ${err.message}` reads "qrImage could not be fetched: the server answered HTTP 404 (Not Found)".
 */
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { checkUrlSyntax, isUnsafeUrlError, safeLookup, urlHost } from '../net/safe-url.ts';
import type { LookupAllFn, OutboundPolicy } from '../net/safe-url.ts';
import { isImageDecodeError, readImageHeader, SNIFF_BYTES, sniffImageFormat, SUPPORTED_FORMATS_TEXT } from './decode.ts';
import type { ImageFormat } from './decode.ts';
import { ByteCollector } from '../util/byte-collector.ts';

/** The body buffer's first size when the server declares no length (it doubles as bytes come). */
const INITIAL_BODY_BYTES = 64 * 1024;

export type { ImageFormat } from './decode.ts';

export interface ImageFetchLimits {
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  maxBytes: number;
  maxPixels: number;
  maxRedirects: number;
}

/**
 * - connect 5 s: a reachable image host answers a TCP handshake (and DNS) in well under a second.
 * - total 20 s: 20 MiB at a modest 10 Mbit/s is ~17 s; a request waits no longer than that on a client's host.
 * - 20 MiB: above any sensible QR image or a high-quality 24 MP phone JPEG, small enough to hold in memory.
 * - 40 MP: covers 8K frames and most phone photos; decoded RGBA that is 160 MiB, a bounded cost.
 * - 3 redirects: http->https plus a short link plus a CDN hop; more is a loop or a maze.
 */
export const DEFAULT_IMAGE_FETCH_LIMITS: Readonly<ImageFetchLimits> = Object.freeze({
  connectTimeoutMs: 5_000,
  totalTimeoutMs: 20_000,
  maxBytes: 20 * 1024 * 1024,
  maxPixels: 40_000_000,
  maxRedirects: 3,
});

export const DEFAULT_IMAGE_FETCH_USER_AGENT = 'qr-art-image-fetch/1';

export interface FetchImageOptions extends Partial<ImageFetchLimits> {
  policy: OutboundPolicy;
  /** Resolver override (tests); defaults to dns.lookup. Its answers are still checked. */
  lookup?: LookupAllFn;
  /** Aborting rejects with signal.reason (not an ImageFetchError), like fetch(). */
  signal?: AbortSignal;
  userAgent?: string;
}

export interface FetchedImage {
  bytes: Buffer;
  format: ImageFormat;
  /** First frame, EXIF orientation applied (the size decodeImage will return). */
  width: number;
  height: number;
  /** Final URL after redirects. */
  url: string;
}

export type ImageFetchErrorCode =
  | 'unsafe_url'
  | 'bad_url'
  | 'http_status'
  | 'too_many_redirects'
  | 'timeout'
  | 'too_large'
  | 'not_an_image'
  | 'too_many_pixels'
  | 'network';

export class ImageFetchError extends Error {
  readonly code: ImageFetchErrorCode;
  /** Worth retrying later: network errors, timeouts, 408/429/5xx. */
  readonly transient: boolean;
  /** The HTTP status, for code http_status. */
  readonly status: number | undefined;
  constructor(
    code: ImageFetchErrorCode,
    message: string,
    options: { transient?: boolean; status?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ImageFetchError';
    this.code = code;
    this.transient = options.transient ?? false;
    this.status = options.status;
  }
}

export function isImageFetchError(err: unknown): err is ImageFetchError {
  return err instanceof ImageFetchError;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NOT_FETCHED = 'could not be fetched:';

function duration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} seconds`;
}

function byteSize(n: number): string {
  if (n >= 1024 * 1024) return `${Math.round((n / (1024 * 1024)) * 10) / 10} MiB`;
  if (n >= 1024) return `${Math.round((n / 1024) * 10) / 10} KiB`;
  return `${n} bytes`;
}

function resolveLimits(options: FetchImageOptions): ImageFetchLimits {
  const limits: ImageFetchLimits = {
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_IMAGE_FETCH_LIMITS.connectTimeoutMs,
    totalTimeoutMs: options.totalTimeoutMs ?? DEFAULT_IMAGE_FETCH_LIMITS.totalTimeoutMs,
    maxBytes: options.maxBytes ?? DEFAULT_IMAGE_FETCH_LIMITS.maxBytes,
    maxPixels: options.maxPixels ?? DEFAULT_IMAGE_FETCH_LIMITS.maxPixels,
    maxRedirects: options.maxRedirects ?? DEFAULT_IMAGE_FETCH_LIMITS.maxRedirects,
  };
  for (const [name, value] of Object.entries(limits)) {
    const min = name === 'maxRedirects' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  }
  return limits;
}

/**
 * Checks one hop. Syntax problems (scheme, credentials, garbage) are bad_url; a destination the
 * policy refuses (literal non-public IP, localhost) is unsafe_url. Names are checked at connect.
 */
function checkHop(url: string, policy: OutboundPolicy, redirected: boolean): URL {
  const syntax = checkUrlSyntax(url, { allowPrivate: true }, { httpsOnly: false });
  if (!syntax.ok) {
    throw new ImageFetchError(
      'bad_url',
      redirected ? `${NOT_FETCHED} the server redirected to a URL that is not followed; ${syntax.reason}` : `is not a usable URL: ${syntax.reason}`,
    );
  }
  const safe = checkUrlSyntax(url, policy, { httpsOnly: false });
  if (!safe.ok) {
    throw new ImageFetchError(
      'unsafe_url',
      redirected
        ? `${NOT_FETCHED} the server redirected to a non-public address; ${safe.reason}`
        : `must point to a public address: ${safe.reason}`,
    );
  }
  return safe.url;
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT)/;

/** Maps a socket / DNS / TLS failure to an ImageFetchError. */
function connectionError(err: unknown, url: URL): ImageFetchError {
  if (err instanceof ImageFetchError) return err;
  const host = urlHost(url);
  if (isUnsafeUrlError(err)) {
    // The resolved address stays in `cause` (logs): echoing it would map internal DNS for the client.
    return new ImageFetchError('unsafe_url', `${NOT_FETCHED} the host ${host} resolves to a non-public address`, { cause: err });
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (code === 'ENOTFOUND') {
    return new ImageFetchError('network', `${NOT_FETCHED} the host name ${host} does not resolve`, { cause: err });
  }
  if (TLS_CODE.test(code)) {
    return new ImageFetchError('network', `${NOT_FETCHED} the server's TLS certificate was not accepted (${code})`, { cause: err });
  }
  const what =
    code === 'ECONNREFUSED'
      ? 'the server refused the connection'
      : code === 'ECONNRESET'
        ? 'the connection was reset'
        : code === 'EAI_AGAIN'
          ? `the host name ${host} could not be resolved right now`
          : `network error (${code || (err instanceof Error ? err.message : String(err))})`;
  return new ImageFetchError('network', `${NOT_FETCHED} ${what}`, { transient: true, cause: err });
}

function statusError(status: number): ImageFetchError {
  const transient = status === 408 || status === 429 || (status >= 500 && status < 600);
  const name = http.STATUS_CODES[status];
  return new ImageFetchError('http_status', `${NOT_FETCHED} the server answered HTTP ${status}${name ? ` (${name})` : ''}`, {
    transient,
    status,
  });
}

type HopResult = { kind: 'redirect'; location: string } | { kind: 'body'; bytes: Buffer };

interface HopContext {
  limits: ImageFetchLimits;
  deadline: number;
  policy: OutboundPolicy;
  lookup: LookupAllFn | undefined;
  signal: AbortSignal | undefined;
  userAgent: string;
}

function requestOnce(url: URL, ctx: HopContext): Promise<HopResult> {
  return new Promise<HopResult>((resolve, reject) => {
    const { limits, signal } = ctx;
    let settled = false;
    let req: http.ClientRequest | undefined;
    let res: IncomingMessage | undefined;
    let totalTimer: NodeJS.Timeout | undefined;
    let connectTimer: NodeJS.Timeout | undefined;

    const cleanup = (): void => {
      clearTimeout(totalTimer);
      clearTimeout(connectTimer);
      signal?.removeEventListener('abort', onAbort);
    };
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      cleanup();
      // Stop reading and drop the socket: no more bytes from a hostile server.
      res?.destroy();
      req?.destroy();
      reject(err);
    };
    const succeed = (result: HopResult): void => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(result);
    };
    function onAbort(): void {
      fail(signal?.reason ?? new DOMException('The operation was aborted', 'AbortError'));
    }

    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });

    const remaining = ctx.deadline - Date.now();
    // Not transient: the host answered but took the whole budget (a drip, a hang). Another
    // attempt would most likely cost a worker the same wait again, each one refunded: a host of
    // the client's choosing could hold workers for nothing.
    const totalError = (): ImageFetchError =>
      new ImageFetchError('timeout', `${NOT_FETCHED} the download did not finish within ${duration(limits.totalTimeoutMs)}`);
    if (remaining <= 0) return fail(totalError());
    totalTimer = setTimeout(() => fail(totalError()), remaining);
    connectTimer = setTimeout(
      () =>
        fail(
          new ImageFetchError('timeout', `${NOT_FETCHED} no connection to the server within ${duration(limits.connectTimeoutMs)}`, {
            transient: true,
          }),
        ),
      Math.min(limits.connectTimeoutMs, remaining),
    );

    const onResponse = (response: IncomingMessage): void => {
      res = response;
      const cutShort = (cause?: unknown): ImageFetchError =>
        new ImageFetchError('network', `${NOT_FETCHED} the connection closed before the whole image arrived`, { transient: true, cause });
      response.on('error', (err) => fail(cutShort(err)));
      const status = response.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status)) {
        const location = response.headers.location;
        response.destroy(); // a redirect body is never read
        if (location === undefined || location.trim() === '') {
          fail(new ImageFetchError('http_status', `${NOT_FETCHED} the server answered HTTP ${status} without a Location`, { status }));
        } else {
          succeed({ kind: 'redirect', location });
        }
        return;
      }
      if (status < 200 || status >= 300) return fail(statusError(status));

      const encoding = response.headers['content-encoding']?.trim().toLowerCase();
      if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
        const shown = /^[a-z0-9-]{1,20}$/.test(encoding) ? `a ${encoding}-encoded` : 'an encoded';
        return fail(new ImageFetchError('not_an_image', `${NOT_FETCHED} the server sent ${shown} body, which is not an image file`));
      }
      const declared = response.headers['content-length'];
      if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > limits.maxBytes) {
        return fail(
          new ImageFetchError('too_large', `is too large: ${byteSize(Number(declared))}; the limit is ${byteSize(limits.maxBytes)}`),
        );
      }

      const body = new ByteCollector(declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : INITIAL_BODY_BYTES, limits.maxBytes);
      let sniffed = false;
      response.on('data', (chunk: Buffer) => {
        if (settled) return;
        if (body.size + chunk.length > limits.maxBytes) {
          return fail(new ImageFetchError('too_large', `is too large: more than the ${byteSize(limits.maxBytes)} limit`));
        }
        body.push(chunk);
        // Give up on an HTML page or other non-image as soon as its first bytes are in.
        if (!sniffed && body.size >= SNIFF_BYTES) {
          sniffed = true;
          if (sniffImageFormat(body.bytes()) === null) {
            fail(
              new ImageFetchError('not_an_image', `is not a ${SUPPORTED_FORMATS_TEXT} image (its content does not start like one of these formats)`),
            );
          }
        }
      });
      response.on('end', () => succeed({ kind: 'body', bytes: body.bytes() }));
      response.on('close', () => {
        if (!response.complete) fail(cutShort());
      });
    };

    try {
      const mod = url.protocol === 'https:' ? https : http;
      req = mod.request({
        method: 'GET',
        protocol: url.protocol,
        hostname: urlHost(url),
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: {
          'user-agent': ctx.userAgent,
          // Only formats we decode; */* last so picky servers do not answer 406.
          accept: 'image/png,image/jpeg,image/webp,image/gif,*/*;q=0.1',
          'accept-encoding': 'identity', // images are compressed already; no decompression bombs
        },
        agent: false, // fresh connection per hop: no socket reuse across hosts or policies
        lookup: safeLookup(ctx.policy, ctx.lookup),
      });
      req.on('socket', (socket) => {
        if (!socket.connecting) clearTimeout(connectTimer);
        else socket.once('connect', () => clearTimeout(connectTimer));
      });
      req.on('error', (err) => fail(connectionError(err, url)));
      req.on('response', onResponse);
      req.end();
    } catch (err) {
      fail(connectionError(err, url));
    }
  });
}

/** Fetch an image URL within the limits; throws ImageFetchError (or signal.reason when aborted). */
export async function fetchImage(url: string, options: FetchImageOptions): Promise<FetchedImage> {
  const limits = resolveLimits(options);
  options.signal?.throwIfAborted();
  const ctx: HopContext = {
    limits,
    deadline: Date.now() + limits.totalTimeoutMs,
    policy: options.policy,
    lookup: options.lookup,
    signal: options.signal,
    userAgent: options.userAgent ?? DEFAULT_IMAGE_FETCH_USER_AGENT,
  };

  let current = checkHop(url, options.policy, false);
  let redirects = 0;
  let bytes: Buffer;
  for (;;) {
    const hop = await requestOnce(current, ctx);
    if (hop.kind === 'body') {
      bytes = hop.bytes;
      break;
    }
    if (redirects >= limits.maxRedirects) {
      throw new ImageFetchError('too_many_redirects', `${NOT_FETCHED} the server redirected more than ${limits.maxRedirects} times`);
    }
    redirects++;
    let next: URL;
    try {
      next = new URL(hop.location, current);
    } catch {
      throw new ImageFetchError('bad_url', `${NOT_FETCHED} the server redirected to an invalid URL`);
    }
    current = checkHop(next.href, options.policy, true);
  }

  options.signal?.throwIfAborted();
  try {
    const header = await readImageHeader(bytes, limits.maxPixels);
    return { bytes, format: header.format, width: header.width, height: header.height, url: current.href };
  } catch (err) {
    if (isImageDecodeError(err)) {
      const code = err.code === 'too_many_pixels' ? 'too_many_pixels' : 'not_an_image';
      throw new ImageFetchError(code, err.message, { cause: err });
    }
    throw err;
  }
}
