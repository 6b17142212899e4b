import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

const KEY = 'key-alice-0123456789abcdef0123456789';

describe('a prediction from create to executed', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: true, env: { API_KEYS: `alice:${KEY}:100`, WORKER_PIPELINE: 'control-image' } });
  });
  afterAll(async () => stack?.stop());

  it('is queued with the spec initial values, then executed with image URLs that serve PNGs', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v4', qrText: 'a forest', qrContent: 'https://example.com', batchSize: 2 },
    });
    expect(created.status).toBe(200);
    expect(created.body.success).toBe(true);
    const record = created.body.data;
    expect(record).toMatchObject({ userId: 'alice', status: 'queued', output: '', error: null, refunded: false, creditType: 'API_CREDITS', startedAt: null, completedAt: null, credits: 4.98 });

    const done = await waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${record.id}`, { key: KEY });
      return got.body.data.status === 'executed' ? got.body.data : undefined;
    });
    expect(done.output.images).toHaveLength(2);
    expect(done.isScanables).toEqual([true, true]);
    expect(done.startedAt).not.toBeNull();
    expect(done.completedAt).not.toBeNull();
    const image = await fetch(done.output.images[0]);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('cache-control')).toContain('immutable');
    const bytes = new Uint8Array(await image.arrayBuffer());
    expect([...bytes.slice(1, 4)]).toEqual([0x50, 0x4e, 0x47]);
  });
});
