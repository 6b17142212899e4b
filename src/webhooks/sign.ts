/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/).
 *
 *   webhook-id         stable across retries of the same message
 *   webhook-timestamp  unix seconds of this attempt
 *   webhook-signature  "v1," + base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`))
 *
 * The secret is "whsec_" + base64(key bytes).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const MIN_KEY_BYTES = 16;
const MAX_KEY_BYTES = 64;

/** A secret: the "whsec_..." string, or key bytes already returned by parseSecret. */
export type WebhookSecret = string | Uint8Array;

export interface SignInput {
  secret: WebhookSecret;
  msgId: string;
  /** Unix seconds. */
  timestamp: number;
  /** The exact request body that will be sent. */
  body: string;
}

export type WebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  'content-type': 'application/json';
};

/** Decodes "whsec_<base64>" to the HMAC key bytes; throws a descriptive Error when malformed. */
export function parseSecret(secret: string): Buffer {
  if (typeof secret !== 'string' || !secret.startsWith(SECRET_PREFIX)) {
    throw new Error(`webhook secret must have the form ${SECRET_PREFIX}<base64>`);
  }
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (b64.length === 0 || b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) {
    throw new Error(`webhook secret must have the form ${SECRET_PREFIX}<base64> (standard, padded base64)`);
  }
  const key = Buffer.from(b64, 'base64');
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
    throw new Error(
      `webhook secret key must be ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes, got ${key.length} bytes`,
    );
  }
  return key;
}

/** A new random secret ("whsec_" + base64 of `bytes` random bytes, default 32). */
export function generateSecret(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < MIN_KEY_BYTES || bytes > MAX_KEY_BYTES) {
    throw new RangeError(`secret length must be ${MIN_KEY_BYTES}..${MAX_KEY_BYTES} bytes`);
  }
  return SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

function keyOf(secret: WebhookSecret): Uint8Array {
  return typeof secret === 'string' ? parseSecret(secret) : secret;
}

function checkInput(msgId: string, timestamp: number): void {
  // msgId goes into a header verbatim: visible ASCII only.
  if (typeof msgId !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(msgId)) {
    throw new Error('webhook msgId must be 1-255 visible ASCII characters');
  }
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new Error('webhook timestamp must be a non-negative integer (unix seconds)');
  }
}

/** Raw base64 HMAC of the signed content. */
function hmacB64(key: Uint8Array, msgId: string, timestamp: number, body: string): string {
  return createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`, 'utf8').digest('base64');
}

/** "v1,<base64 hmac-sha256 of `${msgId}.${timestamp}.${body}`>" */
export function sign(input: SignInput): string {
  checkInput(input.msgId, input.timestamp);
  return `v1,${hmacB64(keyOf(input.secret), input.msgId, input.timestamp, input.body)}`;
}

/** The Standard Webhooks headers for one delivery attempt. */
export function webhookHeaders(input: SignInput): WebhookHeaders {
  return {
    'webhook-id': input.msgId,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': sign(input),
    'content-type': 'application/json',
  };
}

export interface VerifyInput {
  secret: WebhookSecret;
  msgId: string;
  timestamp: number | string;
  body: string;
  /** The webhook-signature header: one or more space-separated "v1,<sig>" entries. */
  signatureHeader: string;
  /** Allowed clock skew in seconds (default 300); pass Infinity to skip the check. */
  toleranceSec?: number;
  nowSec?: number;
}

/** Receiver-side check (useful for tests and self-checks); constant-time comparison. */
export function verifySignature(input: VerifyInput): boolean {
  const ts = typeof input.timestamp === 'string' ? Number(input.timestamp) : input.timestamp;
  if (!Number.isSafeInteger(ts)) return false;
  const now = input.nowSec ?? Math.floor(Date.now() / 1000);
  const tolerance = input.toleranceSec ?? 300;
  if (Math.abs(now - ts) > tolerance) return false;
  let expected: Buffer;
  try {
    checkInput(input.msgId, ts);
    expected = Buffer.from(hmacB64(keyOf(input.secret), input.msgId, ts, input.body), 'utf8');
  } catch {
    return false;
  }
  for (const entry of input.signatureHeader.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(entry.slice(comma + 1), 'utf8');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
  }
  return false;
}
