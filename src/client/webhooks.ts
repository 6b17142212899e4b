/**
 * Checking a webhook the service sent (docs/api.md, Webhooks): Standard Webhooks headers
 * webhook-id, webhook-timestamp (unix seconds) and webhook-signature ("v1,<base64 HMAC-SHA256
 * of '<id>.<timestamp>.<body>'>"), signed with the WEBHOOK_SECRET "whsec_<base64>". The check
 * itself is the standardwebhooks library's (constant-time comparison, timestamps more than
 * 5 minutes from now refused, so a captured delivery cannot be replayed later).
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { PredictionEnvelopeSchema, type PredictionEnvelope } from './schemas.ts';

/** The body of a webhook: the get-prediction answer at the status change. */
export type WebhookEvent = PredictionEnvelope;

/** A fetch Headers, or Node's IncomingHttpHeaders (lower-case names; a repeated header is an array). */
export type WebhookRequestHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** The delivery is not from the service (bad or missing signature, stale timestamp) or its body is not a prediction. */
export class QrArtWebhookError extends Error {
  override readonly name = 'QrArtWebhookError';
}

const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * Verifies a delivery and returns its typed body. `payload` must be the raw body exactly as
 * received (the signature covers those bytes: parse it only after this check). Deduplicate on
 * the webhook-id header: retries of one delivery carry the same id.
 */
export function verifyWebhook(payload: string | Uint8Array, headers: WebhookRequestHeaders, secret: string): WebhookEvent {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  let webhook: Webhook;
  try {
    // Trimmed as the server trims it: a secret read from a file (DATA_DIR/webhook-secret) ends in a newline.
    webhook = new Webhook(secret.trim());
  } catch (error) {
    // The receiver's configuration, not the delivery: said as such, whatever the library's wording.
    throw new TypeError(`the webhook secret is not one the service signs with ("whsec_" and base64): ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = webhook.verify(body, signedHeaders(headers));
  } catch (error) {
    if (error instanceof WebhookVerificationError) throw new QrArtWebhookError(`webhook rejected: ${error.message}`);
    throw error;
  }
  const event = PredictionEnvelopeSchema.safeParse(json);
  if (!event.success) throw new QrArtWebhookError(`webhook body is not a prediction: ${event.error.issues[0]?.message ?? 'unexpected shape'}`);
  return event.data;
}

function signedHeaders(headers: WebhookRequestHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of SIGNED_HEADERS) {
    const value = isFetchHeaders(headers) ? headers.get(name) : headerValue(headers, name);
    if (value === null || value === undefined) throw new QrArtWebhookError(`webhook rejected: missing ${name} header`);
    out[name] = value;
  }
  return out;
}

function isFetchHeaders(headers: WebhookRequestHeaders): headers is Headers {
  return typeof (headers as Headers).get === 'function';
}

/** A header of a plain object, whatever the case of its name; a repeated one is refused (two signature headers would be ambiguous). */
function headerValue(headers: Readonly<Record<string, string | readonly string[] | undefined>>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    if (typeof value === 'string') return value;
    if (value.length === 1) return value[0];
    throw new QrArtWebhookError(`webhook rejected: ${name} header given ${value.length} times`);
  }
  return undefined;
}
