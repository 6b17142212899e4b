/**
 * One HTTP exchange with the API: the key header, JSON in and out, the answer checked against
 * its schema, errors turned into QrArtApiError, and the retry rule (below).
 */
import type { z } from 'zod';
import { ErrorBodySchema, type ErrorDetail } from './schemas.ts';

/** The API answered with an error (or with something that is not the answer it promises). */
export class QrArtApiError extends Error {
  override readonly name = 'QrArtApiError';
  constructor(
    /** HTTP status. */
    readonly status: number,
    /** The API's error code (docs/api.md, Errors); `http_<status>` when the answer had no API error body (a proxy's page); `invalid_response` when a 2xx answer had the wrong shape. */
    readonly code: string,
    message: string,
    /** Which field broke which rule; empty when the API names none. */
    readonly details: readonly ErrorDetail[] = [],
    /** Seconds to wait before trying again, from Retry-After (503, 429); null when absent. */
    readonly retryAfter: number | null = null,
    /** The x-request-id the API logged this request under. */
    readonly requestId: string | null = null,
  ) {
    super(message);
  }
}

/** No answer: the server could not be reached or the connection broke (the request may or may not have arrived). */
export class QrArtConnectionError extends Error {
  override readonly name = 'QrArtConnectionError';
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}

export interface QrArtClientOptions {
  /** The API's base URL, e.g. http://localhost:8080 (a trailing slash is fine). */
  baseUrl: string;
  /** Sent as x-api-key on /v1/predictions calls. */
  apiKey?: string;
  /** A fetch implementation (tests, proxies, instrumentation); default: the global fetch. */
  fetch?: typeof fetch;
  /** Retries of a request that is safe to retry (see Transport.request); default 3. */
  retries?: number;
  /** Longest wait between two tries, whatever Retry-After says; default 30 s. */
  maxRetryDelayMs?: number;
  /**
   * How long one try may wait for its answer (a JSON call: the whole answer; a download: its
   * headers) before it counts as a lost connection, retried by the rule below; default 30 s,
   * at most 2^31 - 1 (a timer's limit), Infinity for none. Without it a server that stalls
   * holds a try for undici's 5 minutes.
   */
  requestTimeoutMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

interface RequestSpec<S extends z.ZodType> extends CallOptions {
  method: 'GET' | 'POST';
  path: string;
  schema: S;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send x-api-key (every /v1/predictions call; quote and files need none). */
  auth: boolean;
  /**
   * Whether trying again cannot do harm: true for reads and quotes, and for a create only when
   * it carries an Idempotency-Key (the server then answers a repeat with the first prediction).
   */
  retry: boolean;
}

const CONNECTION_BACKOFF_MS = 500;

/** The longest a timer waits (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Why fetch would refuse value as a header value, or null when it takes it. Fetch trims the
 * surrounding whitespace (a key read from a file keeps its newline) and then refuses NUL, CR, LF
 * and characters beyond Latin-1. Checked before sending: fetch's own TypeError would otherwise
 * read as a connection failure and be retried.
 */
export function headerValueProblem(value: string): string | null {
  const trimmed = value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (/[\0\r\n]/.test(trimmed)) return 'holds a line break or NUL inside it, which no HTTP header can carry';
  if (/[^\0-\xff]/.test(trimmed)) return 'holds a character beyond Latin-1, which no HTTP header can carry';
  return null;
}

/** Sleeps ms, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Retry-After as seconds: a number of seconds or an HTTP date (RFC 9110 10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly retries: number;
  private readonly maxRetryDelayMs: number;
  private readonly requestTimeoutMs: number;

  constructor(options: QrArtClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    const keyProblem = options.apiKey === undefined ? null : headerValueProblem(options.apiKey);
    if (keyProblem) throw new TypeError(`apiKey ${keyProblem}`);
    this.apiKey = options.apiKey;
    // Bound to globalThis: some runtimes refuse a fetch called with another `this`.
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retries = options.retries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    if (!((this.requestTimeoutMs > 0 && this.requestTimeoutMs <= MAX_TIMER_MS) || this.requestTimeoutMs === Infinity)) {
      throw new TypeError(`requestTimeoutMs must be milliseconds above 0 and at most ${MAX_TIMER_MS}, or Infinity for none; got ${options.requestTimeoutMs}`);
    }
  }

  /**
   * Sends the request and returns the answer checked against spec.schema.
   *
   * Retry rule, for requests marked safe only: a 503 that carries Retry-After (the API's
   * "nothing was changed, come back in n s") is tried again after that delay, and a request
   * that got no answer, or an answer that broke off mid-body, is tried again after 0.5 s, 1 s,
   * 2 s... An unsafe request
   * (a create without an Idempotency-Key) is never repeated: a 503 may come from a proxy in
   * front of the API, and a lost connection may have lost only the answer, so a repeat could
   * create and charge a second prediction. The error then carries retryAfter for the caller.
   */
  async request<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.infer<S>> {
    for (const [name, value] of Object.entries(spec.headers ?? {})) {
      const problem = headerValueProblem(value);
      if (problem) throw new TypeError(`${name} ${problem}`);
    }
    return this.withRetries(spec.retry, spec.signal, () =>
      this.within(this.url(spec.path), spec.signal, async (signal) => {
        const response = await this.send(this.url(spec.path), {
          method: spec.method,
          headers: this.headers(spec),
          body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
          signal,
        });
        if (!response.ok) throw await errorFrom(response);
        return this.parse(response, { ...spec, signal });
      }),
    );
  }

  /**
   * The bytes at an absolute URL, fetched without the key: output image URLs are capabilities
   * of their own and may point at another host (a CDN), which must never see the key. A GET, so
   * the retry rule applies.
   */
  async download(url: string, signal?: AbortSignal): Promise<Uint8Array> {
    return this.withRetries(true, signal, async () => {
      // The time limit is the headers': a large image on a slow line may take longer to arrive.
      const response = await this.within(url, signal, (bounded) => this.send(url, { method: 'GET', signal: bounded }));
      if (!response.ok) throw await errorFrom(response);
      return new Uint8Array(await readBody(response, url, signal, (r) => r.arrayBuffer()));
    });
  }

  /**
   * Runs one try with a signal that also aborts after requestTimeoutMs; a try cut short by that
   * limit (and not by the caller) is a QrArtConnectionError, so the retry rule covers it.
   */
  private async within<T>(url: string, caller: AbortSignal | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.requestTimeoutMs === Infinity) return run(caller ?? new AbortController().signal);
    const limit = new AbortController();
    const timer = setTimeout(() => limit.abort(new Error('request time limit')), this.requestTimeoutMs);
    try {
      return await run(caller ? AbortSignal.any([caller, limit.signal]) : limit.signal);
    } catch (error) {
      if (limit.signal.aborted && !caller?.aborted) {
        throw new QrArtConnectionError(`no answer from ${new URL(url).origin} within ${this.requestTimeoutMs / 1000} s (requestTimeoutMs)`, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs `attempt` under the retry rule above (once when `safe` is false). */
  private async withRetries<T>(safe: boolean, signal: AbortSignal | undefined, attempt: () => Promise<T>): Promise<T> {
    const tries = safe ? 1 + this.retries : 1;
    for (let n = 1; ; n++) {
      try {
        return await attempt();
      } catch (error) {
        if (n >= tries) throw error;
        if (error instanceof QrArtConnectionError) await sleep(Math.min(CONNECTION_BACKOFF_MS * 2 ** (n - 1), this.maxRetryDelayMs), signal);
        else if (error instanceof QrArtApiError && error.status === 503 && error.retryAfter !== null) await sleep(Math.min(error.retryAfter * 1000, this.maxRetryDelayMs), signal);
        else throw error;
      }
    }
  }

  /** A raw fetch against the API (the event stream): key header added, errors of the network as QrArtConnectionError. */
  async stream(path: string, init: { headers?: Record<string, string>; signal?: AbortSignal }): Promise<Response> {
    return this.send(this.url(path), { method: 'GET', headers: { ...this.keyHeader(), ...init.headers }, signal: init.signal });
  }

  private url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  private keyHeader(): Record<string, string> {
    return this.apiKey === undefined ? {} : { 'x-api-key': this.apiKey };
  }

  private headers(spec: RequestSpec<z.ZodType>): Record<string, string> {
    return {
      accept: 'application/json',
      ...(spec.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(spec.auth ? this.keyHeader() : {}),
      ...spec.headers,
    };
  }

  private async send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(url, init);
    } catch (error) {
      // An abort is the caller's decision, not a connection problem: pass it on as it is.
      if (init.signal?.aborted) throw init.signal.reason;
      const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      throw new QrArtConnectionError(`cannot reach ${new URL(url).origin}: ${reason}`, { cause: error });
    }
  }

  private async parse<S extends z.ZodType>(response: Response, spec: RequestSpec<S>): Promise<z.infer<S>> {
    const text = await readBody(response, this.url(spec.path), spec.signal, (r) => r.text());
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalidResponse(response, `${spec.method} ${spec.path} answered ${response.status} with a body that is not JSON`);
    }
    const parsed = spec.schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue ? `${issue.path.join('.') || 'the body'}: ${issue.message}` : 'unexpected shape';
      throw invalidResponse(response, `${spec.method} ${spec.path} answered with an unexpected body (${where})`);
    }
    return parsed.data;
  }
}

/**
 * A body read: an answer that breaks off after its headers (a proxy or the server gone mid-way)
 * is a QrArtConnectionError like one that never came, so the retry rule covers it.
 */
async function readBody<T>(response: Response, url: string, signal: AbortSignal | undefined, read: (response: Response) => Promise<T>): Promise<T> {
  try {
    return await read(response);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new QrArtConnectionError(`the answer from ${new URL(url).origin} broke off: ${reason}`, { cause: error });
  }
}

function invalidResponse(response: Response, message: string): QrArtApiError {
  return new QrArtApiError(response.status, 'invalid_response', message, [], null, response.headers.get('x-request-id'));
}

/** The QrArtApiError of a non-2xx answer: the API's error body when there is one, else the HTTP status. */
export async function errorFrom(response: Response): Promise<QrArtApiError> {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  const requestId = response.headers.get('x-request-id');
  const text = await response.text().catch(() => '');
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON: a proxy's page, say */
  }
  const body = ErrorBodySchema.safeParse(json);
  if (body.success) {
    const { code, message, details } = body.data.error;
    return new QrArtApiError(response.status, code, message, details, retryAfter, requestId);
  }
  const statusText = response.statusText ? ` ${response.statusText}` : '';
  return new QrArtApiError(response.status, `http_${response.status}`, `HTTP ${response.status}${statusText}`, [], retryAfter, requestId);
}
