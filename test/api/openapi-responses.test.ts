/**
 * What the running service really answers, against the /openapi.json it serves: each body
 * validates against the schema its operation documents for that status, the status is one the
 * operation lists, and a prediction record carries no field the document does not name (the
 * schemas allow extra fields, so that is checked separately). The document's own examples are
 * checked in openapi.test.ts; these are the responses themselves.
 */
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rewriteRefs, schemaValidator } from '../helpers/openapi-schemas.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

type Json = Record<string, any>;

const KEY = 'key-alice-0123456789abcdef0123456789';
const POOR_KEY = 'key-bob-0123456789abcdef01234567890';
const V4 = { workflow: 'generate_qr_art_v4', qrText: 'a forest', qrContent: 'https://example.com', batchSize: 2 };

let stack: TestStack;
let doc: Json;
let ajv: Ajv2020;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: { API_KEYS: `alice:${KEY}:100,bob:${POOR_KEY}:1`, WORKER_PIPELINE: 'control-image' } });
  const served = await fetch(`${stack.baseUrl}/openapi.json`);
  doc = (await served.json()) as Json;
  ajv = schemaValidator(doc);
});
afterAll(async () => stack?.stop());

/** Holds a real response to what the document says `method path` answers with `status`. */
function expectDocumented(method: 'get' | 'post', path: string, response: { status: number; body: unknown }): void {
  const where = `${method.toUpperCase()} ${path} ${response.status}`;
  const documented = doc.paths[path]?.[method]?.responses?.[String(response.status)];
  expect(documented, `${where} is not in the document`).toBeDefined();
  const schema = documented.content?.['application/json']?.schema;
  expect(schema, `${where} documents no JSON body`).toBeDefined();
  const validate = ajv.compile(rewriteRefs(schema));
  expect(validate(response.body), `${where}: ${ajv.errorsText(validate.errors)}`).toBe(true);
}

/** The fields of `value` that the component schema `name` does not list. */
function undocumentedFields(value: Json, name: string): string[] {
  const properties = doc.components.schemas[name].properties as Json;
  return Object.keys(value).filter((field) => !(field in properties));
}

describe('the responses the service really sends, against the /openapi.json it serves', () => {
  it('a create, the record queued and then executed, the list and a quote: each as documented, no field left out of the document', async () => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: V4 });
    expect(created.status).toBe(200);
    expectDocumented('post', '/v1/predictions/queue', created);
    expect(undocumentedFields(created.body.data, 'Prediction')).toEqual([]);

    const id = created.body.data.id as string;
    const done = await waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${id}`, { key: KEY });
      return got.body.data.status === 'executed' ? got : undefined;
    });
    expectDocumented('get', '/v1/predictions/{predictionId}', done);
    expect(undocumentedFields(done.body.data, 'Prediction')).toEqual([]);
    // The executed output's own fields: images and scanRobustness, each one per image.
    const outputFields = doc.components.schemas.Prediction.properties.output.oneOf[1].properties as Json;
    expect(Object.keys(done.body.data.output).filter((field) => !(field in outputFields))).toEqual([]);
    expect(done.body.data.output.scanRobustness).toHaveLength(done.body.data.output.images.length);

    // An image, then the same image asked again with its etag: both statuses are the operation's.
    const image = await fetch(done.body.data.output.images[0] as string);
    expect(image.status).toBe(200);
    expect(doc.paths['/v1/files/{name}'].get.responses['200'].content['image/png']).toBeDefined();
    const again = await fetch(done.body.data.output.images[0] as string, { headers: { 'if-none-match': image.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect(doc.paths['/v1/files/{name}'].get.responses['304']).toBeDefined();

    const list = await stack.call('GET', '/v1/predictions', { key: KEY });
    expect(list.status).toBe(200);
    expectDocumented('get', '/v1/predictions', list);
    expect(list.body.data.docs.length).toBeGreaterThan(0);
    for (const item of list.body.data.docs) expect(undocumentedFields(item, 'Prediction')).toEqual([]);

    const quote = await stack.call('POST', '/v1/predictions/quote', { body: V4 });
    expect(quote.status).toBe(200);
    expectDocumented('post', '/v1/predictions/quote', quote);
  });

  it('the refusals: 400, 401, 402, 404, 405, 415 and 422, each with the error body its operation documents', async () => {
    const invalid = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { ...V4, qrStrength: 9 } });
    expect(invalid.status).toBe(400);
    expectDocumented('post', '/v1/predictions/queue', invalid);

    const keyless = await stack.call('POST', '/v1/predictions/queue', { key: null, body: V4 });
    expect(keyless.status).toBe(401);
    expectDocumented('post', '/v1/predictions/queue', keyless);

    const poor = await stack.call('POST', '/v1/predictions/queue', { key: POOR_KEY, body: V4 });
    expect(poor.status).toBe(402);
    expectDocumented('post', '/v1/predictions/queue', poor);

    const missing = await stack.call('GET', '/v1/predictions/3f0c6a52-0000-4b7a-9c2f-5e8d41a7b903', { key: KEY });
    expect(missing.status).toBe(404);
    expectDocumented('get', '/v1/predictions/{predictionId}', missing);

    const notOutpainting = await stack.call('GET', `/v1/predictions/queue?workflow=generate_qr_art_v4`, { key: KEY });
    expect(notOutpainting.status).toBe(405);
    expectDocumented('get', '/v1/predictions/queue', notOutpainting);

    const notJson = await stack.call('POST', '/v1/predictions/queue', { key: KEY, rawBody: 'workflow=generate_qr_art_v4', headers: { 'content-type': 'text/plain' } });
    expect(notJson.status).toBe(415);
    expectDocumented('post', '/v1/predictions/queue', notJson);

    const headers = { 'idempotency-key': 'openapi-responses-1' };
    expect((await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: V4, headers })).status).toBe(200);
    const reused = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { ...V4, qrText: 'a lake' }, headers });
    expect(reused.status).toBe(422);
    expectDocumented('post', '/v1/predictions/queue', reused);
  });
});
