/**
 * One signed webhook POST. Transport-independent of the dispatcher: it only decides what
 * happened (delivered / retry later / give up); scheduling lives in retry-policy.ts.
 */
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { checkUrlSyntax, connectionPolicy, isUnsafeUrlError, safeLookup, urlHost } from '../net/safe-url.ts';
import type { LookupAllFn, OutboundPolicy } from '../net/safe-url.ts';
import { webhookHeaders } from './sign.ts';
import type { WebhookSecret } from './sign.ts';

export type DeliveryOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'retry'; reason: string; status?: number; retryAfter?: string | null }
  | { kind: 'give_up'; reason: string; status?: number };

export interface DeliverOptions {
  url: string;
  /** Exact JSON body to send (signed as-is). */
  body: string;
  /** webhook-id: stable across retries of the same message. */
  msgId: string;
  /** "whsec_..." (or key bytes from parseSecret). */
  secret: WebhookSecret;
  /** Unix seconds for webhook-timestamp; defaults to now (each attempt is signed afresh). */
  timestampSec?: number;
  /** Whole-exchange limit (DNS, connect, TLS, response headers), default 10000. */
  timeoutMs?: number;
  policy: OutboundPolicy;
  userAgent: string;
  /** Resolver override (tests); defaults to dns.lookup. */
  lookup?: LookupAllFn;
}

export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** Maps an HTTP status to an outcome. */
export function outcomeForStatus(status: number, retryAfter: string | null = null): DeliveryOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status >= 300 && status < 400) return { kind: 'give_up', reason: 'redirects are not followed', status };
  if (status === 408 || status === 429 || (status >= 500 && status < 600)) {
    return { kind: 'retry', reason: `HTTP ${status}`, status, retryAfter };
  }
  return { kind: 'give_up', reason: `HTTP ${status}`, status };
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

export async function deliverWebhook(opts: DeliverOptions): Promise<DeliveryOutcome> {
  try {
    return await deliverInner(opts);
  } catch (err) {
    // Defensive: deliverInner is written not to throw.
    return { kind: 'retry', reason: `unexpected error: ${errorText(err)}` };
  }
}

function deliverInner(opts: DeliverOptions): Promise<DeliveryOutcome> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const syntax = { httpsOnly: true };
  const checked = checkUrlSyntax(opts.url, opts.policy, syntax);
  if (!checked.ok) return Promise.resolve({ kind: 'give_up', reason: `unsafe or invalid URL: ${checked.reason}` });
  const url = checked.url;
  // Plain http (ALLOW_PRIVATE_URLS only) may reach only a name whose every address is private.
  const policy = connectionPolicy(url, opts.policy, syntax);

  let headers: Record<string, string | number>;
  try {
    headers = {
      ...webhookHeaders({
        secret: opts.secret,
        msgId: opts.msgId,
        timestamp: opts.timestampSec ?? Math.floor(Date.now() / 1000),
        body: opts.body,
      }),
      'user-agent': opts.userAgent,
      'content-length': Buffer.byteLength(opts.body, 'utf8'),
      accept: '*/*',
    };
  } catch (err) {
    return Promise.resolve({ kind: 'give_up', reason: `cannot sign webhook: ${errorText(err)}` });
  }

  return new Promise<DeliveryOutcome>((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let req: http.ClientRequest | undefined;
    const finish = (o: DeliveryOutcome): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(o);
    };

    const onError = (err: unknown): void => {
      if (isUnsafeUrlError(err)) {
        finish({ kind: 'give_up', reason: `unsafe URL: ${(err as Error).message}` });
      } else {
        finish({ kind: 'retry', reason: errorText(err) });
      }
    };

    const onResponse = (res: IncomingMessage): void => {
      const status = res.statusCode ?? 0;
      const ra = res.headers['retry-after'];
      const outcome = outcomeForStatus(status, typeof ra === 'string' ? ra : null);
      // Read (and discard) at most MAX_RESPONSE_BYTES, then settle on the status.
      let received = 0;
      const done = (): void => {
        if (!res.destroyed && !res.complete) res.destroy();
        finish(outcome);
      };
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
      res.on('close', done);
      res.on('aborted', done);
      if (settled) return;
      // One deadline for the whole attempt, headers and body: if the body stalls past it we
      // still report the status we got.
      if (timer) clearTimeout(timer);
      timer = setTimeout(done, Math.max(0, deadline - Date.now()));
    };

    const deadline = Date.now() + timeoutMs;
    timer = setTimeout(() => {
      const err = new Error(`no response within ${timeoutMs} ms`) as NodeJS.ErrnoException;
      err.code = 'ETIMEDOUT';
      onError(err);
      req?.destroy(err);
    }, timeoutMs);

    try {
      const mod = url.protocol === 'https:' ? https : http;
      req = mod.request({
        method: 'POST',
        protocol: url.protocol,
        hostname: urlHost(url),
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers,
        agent: false, // fresh connection: no socket reuse across policies/hosts
        lookup: safeLookup(policy, opts.lookup),
      });
      req.on('error', onError);
      req.on('response', onResponse);
      req.end(opts.body, 'utf8');
    } catch (err) {
      if (isUnsafeUrlError(err)) onError(err);
      else finish({ kind: 'give_up', reason: `cannot build request: ${errorText(err)}` });
      req?.destroy();
    }
  });
}
