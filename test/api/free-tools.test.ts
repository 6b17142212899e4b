import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/service.ts';
import { RESPONSE_SCHEMAS } from '../../src/api/openapi-schemas.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { controlPlanFor } from '../../src/workflows/control.ts';
import { renderControlImage } from '../../src/qr/control-image.ts';
import { encodePng } from '../../src/image/decode.ts';

const v5 = { workflow: 'generate_qr_art_v5', qrContent: 'https://example.com/menu', aspectRatio: '16:9', resolution: 'HD', qrCodePartern: 'd1', qrRatio: 0.5 };

describe('the keyless preview and quote', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { PREVIEW_RATE_LIMIT: '20' } });
  });
  afterAll(async () => stack?.stop());

  const post = (path: string, body: unknown) =>
    fetch(`${stack.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('previews a v5 layout without a key or a prompt: the qr render image, scaled to 512 px, with its layout and price', async () => {
    const response = await post('/v1/qr/preview', v5);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    const layout = JSON.parse(response.headers.get('x-qr-layout')!);
    const png = Buffer.from(await response.arrayBuffer());
    const meta = await sharp(png).metadata();
    expect(Math.max(meta.width!, meta.height!)).toBe(512);
    expect(meta.width! / meta.height!).toBeCloseTo(layout.width / layout.height, 2);
    // The same layout `qr-art qr render` draws, from the same code.
    const parsed = parseCreateBody({ ...v5, prompt: 'x' }, { allowPrivateUrls: false, randomSeed: () => 0 });
    if (!parsed.ok) throw new Error('fixture body is invalid');
    const plan = controlPlanFor(parsed.value.workflow, parsed.value.input);
    if (plan.kind !== 'content') throw new Error('v5 has a content plan');
    const control = renderControlImage(plan);
    expect(layout).toEqual({ width: plan.canvas.width, height: plan.canvas.height, codeSide: control.layout.codePixels, ...plan.placement, version: control.matrix.version });
    // Every field the document promises, and only those.
    expect(Object.keys(layout).sort()).toEqual([...RESPONSE_SCHEMAS.QrLayout.required].sort());
    expect(Object.keys(layout).sort()).toEqual(Object.keys(RESPONSE_SCHEMAS.QrLayout.properties).sort());
    expect(Number(response.headers.get('x-credits'))).toBe(parsed.value.costCents / 100);
    const full = await sharp(await encodePng(control.image)).resize(meta.width, meta.height, { fit: 'fill' }).greyscale().raw().toBuffer();
    const got = await sharp(png).greyscale().raw().toBuffer();
    expect(got.length).toBe(full.length);
    let difference = 0;
    for (let i = 0; i < got.length; i++) difference += Math.abs(got[i]! - full[i]!);
    expect(difference / got.length).toBeLessThan(1);
  });

  it('moves the code when qrX and qrY change, and previews the v4 family at its fixed size', async () => {
    const a = JSON.parse((await post('/v1/qr/preview', { ...v5, qrX: 0, qrY: 0 })).headers.get('x-qr-layout')!);
    const b = JSON.parse((await post('/v1/qr/preview', { ...v5, qrX: 100, qrY: 20 })).headers.get('x-qr-layout')!);
    expect([a.x, a.y, b.x, b.y]).toEqual([0, 0, 100, 20]);
    const v4 = await post('/v1/qr/preview', { workflow: 'generate_qr_art_v4', qrContent: 'tel:+15550100' });
    expect(v4.status).toBe(200);
    // null is absent (docs/workflows.md), for the text fields the preview does not need too.
    expect((await post('/v1/qr/preview', { ...v5, prompt: null })).status).toBe(200);
    expect((await post('/v1/qr/preview', { workflow: 'generate_qr_art_v4', qrContent: 'tel:+15550100', qrText: null })).status).toBe(200);
    // Blank is not written yet either: the layout does not depend on it.
    expect((await post('/v1/qr/preview', { ...v5, prompt: '   ' })).status).toBe(200);
    expect((await post('/v1/qr/preview', { workflow: 'generate_qr_art_v4', qrContent: 'tel:+15550100', qrText: '' })).status).toBe(200);
  });

  it('answers a broken layout field with the create rule naming it, and a workflow without a layout with workflow_has_preview', async () => {
    const bad = await post('/v1/qr/preview', { ...v5, qrRatio: 5 });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as any;
    expect(body.error.details).toEqual([expect.objectContaining({ field: 'qrRatio' })]);
    const client = await post('/v1/qr/preview', { workflow: 'generate_qr_art', qrText: 'x', qrImage: 'https://example.com/qr.png' });
    expect(client.status).toBe(400);
    expect(((await client.json()) as any).error.details).toEqual([expect.objectContaining({ field: 'workflow', rule: 'workflow_has_preview' })]);
    // Said at once, before the workflow's own required fields.
    for (const workflow of ['generate_qr_art_v3b', 'outpainting']) {
      const bare = await post('/v1/qr/preview', { workflow });
      expect(bare.status).toBe(400);
      expect(((await bare.json()) as any).error.details).toEqual([expect.objectContaining({ field: 'workflow', rule: 'workflow_has_preview' })]);
    }
  });

  it('quotes what a create would charge, with the defaults filled in and no seed drawn', async () => {
    const response = await post('/v1/predictions/quote', { ...v5, prompt: 'a lighthouse', batchSize: 2 });
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as any;
    const parsed = parseCreateBody({ ...v5, prompt: 'a lighthouse', batchSize: 2 }, { allowPrivateUrls: false });
    if (!parsed.ok) throw new Error('fixture body is invalid');
    expect(data.credits).toBe(parsed.value.costCents / 100);
    expect(data.workflow).toBe('generate_qr_art_v5');
    expect(data.input.seed).toBeUndefined();
    expect(data.input.batchSize).toBe(2);
    const seeded = (await (await post('/v1/predictions/quote', { ...v5, prompt: 'a lighthouse', seed: 7 })).json()) as any;
    expect(seeded.data.input.seed).toBe(7);
    const missing = await post('/v1/predictions/quote', { workflow: 'generate_qr_art_v5' });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as any).error.details.map((d: { field: string }) => d.field)).toContain('qrContent');
  });

  it('limits one address to PREVIEW_RATE_LIMIT a minute: 429 rate_limited with Retry-After', async () => {
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 22; i++) {
      const response = await post('/v1/predictions/quote', { ...v5, prompt: 'x' });
      statuses.push(response.status);
      if (response.status === 429) limited = response;
    }
    expect(statuses).toContain(429);
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = await limited!.json();
    expect(body).toMatchObject({ success: false, error: { code: 'rate_limited', details: [{ field: '', rule: 'rate_limit' }] } });
  });
});

describe('the keyless tools behind a proxy (TRUST_PROXY=1, as deploy/ sets it behind its Ingress)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { PREVIEW_RATE_LIMIT: '3', TRUST_PROXY: '1' } });
  });
  afterAll(async () => stack?.stop());

  const quoteFrom = async (forwardedFor: string) => {
    const response = await fetch(`${stack.baseUrl}/v1/predictions/quote`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ ...v5, prompt: 'x' }),
    });
    return response.status;
  };

  it('counts the limit per client address the proxy appended, which a client cannot choose', async () => {
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await quoteFrom('203.0.113.1'));
    expect(first).toEqual([200, 200, 200, 429]);
    // What the client wrote itself comes before what the proxy appended: the proxy's entry counts.
    expect(await quoteFrom('198.51.100.9, 203.0.113.1')).toBe(429);
    // Another client behind the same proxy has its own budget.
    expect(await quoteFrom('203.0.113.2')).toBe(200);
  });
});
