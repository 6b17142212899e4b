import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceOf } from '../../src/store/accounts.ts';
import { sleep } from '../helpers/flows.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

/**
 * Idempotency-Key on create: a client that retries (after a timeout, a 503, a dropped
 * connection) with the same key and body gets the prediction the key made, charged once.
 */

const KEY = 'key-idem-0123456789abcdef0123456789ab';
const OTHER = 'key-idem-other-0123456789abcdef012345';
const POOR = 'key-idem-poor-0123456789abcdef0123456';
/** Short, so expiry can be seen: 3.6 s. */
const TTL_HOURS = 0.001;

const body = (content = 'https://example.com/idem') => ({ workflow: 'generate_qr_art_v4s', qrText: 'a harbour', qrContent: content });

describe('creates with an Idempotency-Key', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `ivy:${KEY}:100,otto:${OTHER}:100,pat:${POOR}:1`, IDEMPOTENCY_KEY_TTL_HOURS: String(TTL_HOURS) } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (idempotencyKey: string, payload: unknown = body(), key = KEY) =>
    stack.call('POST', '/v1/predictions/queue', { key, body: payload, headers: { 'idempotency-key': idempotencyKey } });
  const charges = async (userId: string) =>
    Number((await stack.api.db.query<{ n: string | number }>("SELECT count(*) AS n FROM credit_ledger WHERE user_id = $1 AND reason = 'charge'", [userId])).rows[0]!.n);

  it('the same key and body return the same prediction, charged once, marked as replayed', async () => {
    const balance = await balanceOf(stack.api.db, 'ivy');
    const key = randomUUID();
    const first = await create(key);
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // The same request written with other key order.
    const second = await create(key, { qrContent: 'https://example.com/idem', qrText: 'a harbour', workflow: 'generate_qr_art_v4s' });
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(second.body.data.input).toEqual(first.body.data.input);
    expect(await balanceOf(stack.api.db, 'ivy')).toBe(balance - 100);
  });

  it('racing creates with one key make one prediction and one charge', async () => {
    const before = await charges('ivy');
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 8 }, () => create(key, body('https://example.com/race'))));
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((answer) => answer.body.data.id)).size).toBe(1);
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(7);
    expect(await charges('ivy')).toBe(before + 1);
  });

  it('the same key with a different body is a 422 naming the key, and nothing is charged', async () => {
    const key = randomUUID();
    expect((await create(key)).status).toBe(200);
    const before = await charges('ivy');
    const reused = await create(key, body('https://example.com/something-else'));
    expect(reused.status).toBe(422);
    expect(reused.body.error).toMatchObject({ code: 'idempotency_key_reused', details: [{ field: 'idempotency-key', rule: 'same_request' }] });
    expect(reused.body.error.message).toContain(key);
    expect(await charges('ivy')).toBe(before);
  });

  it('keys belong to their user: another user may use the same key for their own prediction', async () => {
    const key = randomUUID();
    const mine = await create(key);
    const theirs = await create(key, body(), OTHER);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    expect(theirs.body.data.userId).toBe('otto');
  });

  it('a body nested deeper than the call stack is digested like any other: created, then replayed', async () => {
    // Unknown fields are ignored, however deep; 20000 levels fit in 40 KB, under the body limit.
    const depth = 20_000;
    const rawBody = `{"workflow":"generate_qr_art_v4s","qrText":"a harbour","qrContent":"https://example.com/deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const key = randomUUID();
    const send = () => stack.call('POST', '/v1/predictions/queue', { key: KEY, rawBody, headers: { 'idempotency-key': key, 'content-type': 'application/json' } });
    const first = await send();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
  });

  it('a malformed key is a 400 naming the header', async () => {
    for (const bad of ['has space', 'x'.repeat(256), 'tab\there']) {
      const answer = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: body(), headers: { 'idempotency-key': bad } });
      expect(answer.status).toBe(400);
      expect(answer.body.error.details[0]).toMatchObject({ field: 'idempotency-key', rule: 'format' });
    }
  });

  it('a refused create (no credits) does not use up its key', async () => {
    const key = randomUUID();
    const poor = await create(key, { ...body(), workflow: 'generate_qr_art_v4' }, POOR);
    expect(poor.status).toBe(402);
    const count = Number((await stack.api.db.query<{ n: string | number }>('SELECT count(*) AS n FROM idempotency_keys WHERE key = $1', [key])).rows[0]!.n);
    expect(count).toBe(0);
  });

  it('after the configured time a key may be used afresh', async () => {
    const key = randomUUID();
    const first = await create(key);
    await sleep(TTL_HOURS * 3600_000 + 300);
    const later = await create(key, body('https://example.com/a-new-request'));
    expect(later.status).toBe(200);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.body.data.id).not.toBe(first.body.data.id);
  });
});
