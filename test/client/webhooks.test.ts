/**
 * verifyWebhook accepts exactly what the server's signer (src/webhooks/sign.ts) sends and
 * refuses anything else: a changed body, another secret, a stale or future timestamp, a
 * missing header, a body that is not a prediction. (test/client/wait.test.ts also verifies
 * deliveries the real dispatcher sent.)
 */
import { describe, expect, it } from 'vitest';
import { QrArtWebhookError, verifyWebhook, type PredictionRecord } from '../../src/client/index.ts';
import { generateSecret, webhookHeaders } from '../../src/webhooks/sign.ts';
import { TEST_SECRET } from '../helpers/service.ts';

const record: PredictionRecord = {
  id: '5f0c1f5e-6b0e-4d59-9d2c-0d4b8e6f7a11',
  userId: 'cleo',
  createdAt: '2025-01-02T03:04:05.000Z',
  startedAt: '2025-01-02T03:04:06.000Z',
  updatedAt: '2025-01-02T03:04:09.000Z',
  completedAt: '2025-01-02T03:04:09.000Z',
  status: 'executed',
  input: { workflow: 'generate_qr_art_v5s', prompt: 'a koi pond — 鯉', qrContent: 'https://example.com', seed: 7 },
  output: { images: ['https://files.example.com/v1/files/abc.png'] },
  error: null,
  refunded: false,
  creditType: 'API_CREDITS',
  isScanables: [true],
  credits: 1.49,
};

const now = () => Math.floor(Date.now() / 1000);

/** A delivery as the dispatcher sends it: the body serialized once, signed with the server's signer. */
function delivery(body: string, options: { timestamp?: number; secret?: string; id?: string } = {}) {
  const headers = webhookHeaders({ secret: options.secret ?? TEST_SECRET, msgId: options.id ?? `msg_${record.id}_executed`, timestamp: options.timestamp ?? now(), body });
  return { body, headers };
}

const rejected = (run: () => unknown): QrArtWebhookError => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(QrArtWebhookError);
    return error as QrArtWebhookError;
  }
  throw new Error('verifyWebhook accepted it');
};

describe('verifyWebhook', () => {
  const body = JSON.stringify({ success: true, data: record });

  it('returns the typed prediction body of a delivery signed by the server, from a string, bytes, Node headers or fetch Headers', () => {
    const { headers } = delivery(body);
    expect(verifyWebhook(body, headers, TEST_SECRET)).toEqual({ success: true, data: record });
    expect(verifyWebhook(new TextEncoder().encode(body), new Headers(headers), TEST_SECRET).data.input.prompt).toBe('a koi pond — 鯉');
    // Node's IncomingHttpHeaders: lower-case names, a header sent once is a string.
    expect(verifyWebhook(body, { ...headers, host: 'receiver.example' }, TEST_SECRET).data.status).toBe('executed');
  });

  it('takes the secret as read from a file (with its newline); a secret of another form is a TypeError saying so', () => {
    const { body, headers } = delivery(JSON.stringify({ success: true, data: record }));
    expect(verifyWebhook(body, headers, `${TEST_SECRET}\n`)).toEqual({ success: true, data: record });
    expect(() => verifyWebhook(body, headers, 'whsec_not*base64')).toThrow(TypeError);
    expect(() => verifyWebhook(body, headers, 'whsec_not*base64')).toThrow(/^the webhook secret is not one the service signs with/);
  });

  it('rejects a changed body, another secret, and a missing or repeated signature header', () => {
    const { headers } = delivery(body);
    expect(rejected(() => verifyWebhook(body.replace('"credits":1.49', '"credits":0'), headers, TEST_SECRET)).message).toMatch(/signature/i);
    rejected(() => verifyWebhook(body, headers, generateSecret()));
    const { 'webhook-signature': _signature, ...unsigned } = headers;
    expect(rejected(() => verifyWebhook(body, unsigned, TEST_SECRET)).message).toContain('missing webhook-signature');
    rejected(() => verifyWebhook(body, { ...headers, 'webhook-signature': [headers['webhook-signature'], 'v1,AAAA'] }, TEST_SECRET));
  });

  it('rejects a delivery signed more than 5 minutes ago or ahead (a replayed capture)', () => {
    const old = delivery(body, { timestamp: now() - 6 * 60 });
    expect(rejected(() => verifyWebhook(old.body, old.headers, TEST_SECRET)).message).toMatch(/timestamp/i);
    const ahead = delivery(body, { timestamp: now() + 6 * 60 });
    rejected(() => verifyWebhook(ahead.body, ahead.headers, TEST_SECRET));
    const recent = delivery(body, { timestamp: now() - 60 });
    expect(verifyWebhook(recent.body, recent.headers, TEST_SECRET).data.id).toBe(record.id);
  });

  it('rejects a correctly signed body that is not a prediction', () => {
    const other = delivery(JSON.stringify({ success: true, data: { id: record.id } }));
    expect(rejected(() => verifyWebhook(other.body, other.headers, TEST_SECRET)).message).toMatch(/not a prediction/);
  });
});
