/**
 * Clients send one body to generate_qr_art_v5 and generate_qr_art_v5s: through the real API
 * (as in production: ALLOW_PRIVATE_URLS=false), v5s accepts v5's steps and cfg, charges its own
 * price, keeps what was asked in the record, and /openapi.json tells what the fast tier runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/service.ts';

const KEY = 'key-v5body-0123456789abcdef0123';
const V5_BODY = { prompt: 'a koi pond at dawn', qrContent: 'https://example.com/koi', steps: 25, cfg: 7, aspectRatio: '16:9' };

describe('a v5 body sent to v5s', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `vera:${KEY}:100`, ALLOW_PRIVATE_URLS: 'false' } });
  });
  afterAll(async () => stack?.stop());

  it('is queued (200) at the v5s price, with steps 25 and cfg 7 kept in the input', async () => {
    const v5s = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'generate_qr_art_v5s', ...V5_BODY } });
    expect(v5s.status, JSON.stringify(v5s.body)).toBe(200);
    expect(v5s.body.data).toMatchObject({ status: 'queued', credits: 1.49 });
    expect(v5s.body.data.input).toMatchObject({ workflow: 'generate_qr_art_v5s', steps: 25, cfg: 7 });

    // The same body on v5: the same echo but for the workflow, at v5's price.
    const v5 = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'generate_qr_art_v5', ...V5_BODY } });
    expect(v5.status, JSON.stringify(v5.body)).toBe(200);
    expect(v5.body.data.credits).toBe(2.99);
    const { workflow: _a, seed: _s1, ...fromV5 } = v5.body.data.input;
    const { workflow: _b, seed: _s2, ...fromV5s } = v5s.body.data.input;
    expect(fromV5s).toEqual(fromV5);

    // Reading it back gives what was asked.
    const read = await stack.call('GET', `/v1/predictions/${v5s.body.data.id}`, { key: KEY });
    expect(read.body.data.input).toMatchObject({ steps: 25, cfg: 7 });
  });

  it('still refuses what v5 refuses (steps 61, cfg 21) with 400 naming the field', async () => {
    const response = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'generate_qr_art_v5s', ...V5_BODY, steps: 61, cfg: 21 } });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'steps', rule: 'max' }), expect.objectContaining({ field: 'cfg', rule: 'max' })]),
    );
  });

  it("/openapi.json gives v5s v5's ranges and says what the fast tier runs", async () => {
    const response = await fetch(`${stack.baseUrl}/openapi.json`);
    const doc = (await response.json()) as { components: { schemas: Record<string, { properties: Record<string, { minimum: number; maximum: number; default: number; description: string }> }> } };
    const v5s = doc.components.schemas.Create_generate_qr_art_v5s!.properties;
    expect(v5s.steps).toMatchObject({ minimum: 4, maximum: 60, default: 8 });
    expect(v5s.steps!.description).toMatch(/samples with 4\.\.12: a larger value .* runs as 12/);
    expect(v5s.cfg).toMatchObject({ minimum: 1, maximum: 20, default: 1 });
    expect(v5s.cfg!.description).toMatch(/samples with 1\.\.3: a larger value .* runs as 3/);
    expect(v5s.cfg!.description).toMatch(/input echo keeps the value sent; the price does not depend on it/);
    // v5 runs what it accepts: no such note.
    expect(doc.components.schemas.Create_generate_qr_art_v5!.properties.steps!.description).not.toMatch(/runs as/);
  });
});
