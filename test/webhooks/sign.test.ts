import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateSecret, parseSecret, sign, verifySignature, webhookHeaders } from '../../src/webhooks/sign.ts';

const body = JSON.stringify({ id: 'pred_123', status: 'succeeded', output: ['https://x/y.png'], note: 'ünïcödé ✓' });

describe('sign', () => {
  it('matches the Standard Webhooks reference vector', () => {
    // Test vector from the standard-webhooks repository.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(
      sign({ secret, msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: 1614265330, body: '{"test": 2432232314}' }),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('is verified by the independent standardwebhooks package', () => {
    const secret = generateSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders({ secret, msgId: 'msg_abc', timestamp, body });
    expect(headers).toEqual({
      'webhook-id': 'msg_abc',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
      'content-type': 'application/json',
    });
    const wh = new Webhook(secret);
    expect(wh.verify(body, headers)).toEqual(JSON.parse(body));
    expect(headers['webhook-signature']).toBe(wh.sign('msg_abc', new Date(timestamp * 1000), body));
  });

  it('fails verification for a tampered body, id, timestamp or another secret', () => {
    const secret = generateSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders({ secret, msgId: 'msg_abc', timestamp, body });
    const wh = new Webhook(secret);
    expect(() => wh.verify(body.replace('succeeded', 'failed'), headers)).toThrow(/signature/i);
    expect(() => wh.verify(body, { ...headers, 'webhook-id': 'msg_abd' })).toThrow(/signature/i);
    expect(() => wh.verify(body, { ...headers, 'webhook-timestamp': String(timestamp - 1) })).toThrow(/signature/i);
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow(/signature/i);
  });

  it('accepts pre-parsed key bytes', () => {
    const secret = generateSecret();
    const a = sign({ secret, msgId: 'm1', timestamp: 1700000000, body });
    expect(sign({ secret: parseSecret(secret), msgId: 'm1', timestamp: 1700000000, body })).toBe(a);
  });

  it('rejects header-unsafe ids and bad timestamps', () => {
    const secret = generateSecret();
    expect(() => sign({ secret, msgId: 'a\r\nx-evil: 1', timestamp: 1, body })).toThrow(/msgId/);
    expect(() => sign({ secret, msgId: '', timestamp: 1, body })).toThrow(/msgId/);
    expect(() => sign({ secret, msgId: 'm', timestamp: 1.5, body })).toThrow(/timestamp/);
  });
});

describe('parseSecret / generateSecret', () => {
  it('generates distinct 32-byte whsec_ secrets', () => {
    const a = generateSecret();
    const b = generateSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(a).not.toBe(b);
    expect(parseSecret(a)).toHaveLength(32);
    expect(generateSecret(64)).toMatch(/^whsec_/);
  });

  it.each([
    ['', /whsec_<base64>/],
    ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', /whsec_<base64>/],
    ['whsec_', /whsec_<base64>/],
    ['whsec_not base64!', /base64/],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS', /base64/],
    ['whsec_c2hvcnQ=', /16 to 64 bytes/],
    [`whsec_${Buffer.alloc(65).toString('base64')}`, /16 to 64 bytes/],
  ])('rejects %j', (secret, msg) => {
    expect(() => parseSecret(secret)).toThrow(msg);
  });
});

describe('verifySignature', () => {
  it('agrees with standardwebhooks', () => {
    const secret = generateSecret();
    const wh = new Webhook(secret);
    const now = Math.floor(Date.now() / 1000);
    const sig = wh.sign('msg_1', new Date(now * 1000), body);
    const base = { secret, msgId: 'msg_1', timestamp: now, body };
    expect(verifySignature({ ...base, signatureHeader: sig })).toBe(true);
    expect(verifySignature({ ...base, signatureHeader: `v1,bogus ${sig}` })).toBe(true);
    expect(verifySignature({ ...base, body: `${body} `, signatureHeader: sig })).toBe(false);
    expect(verifySignature({ ...base, signatureHeader: sig.replace('v1,', 'v2,') })).toBe(false);
    expect(verifySignature({ ...base, signatureHeader: sig, nowSec: now + 301 })).toBe(false);
  });
});
