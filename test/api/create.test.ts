import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceOf } from '../../src/store/accounts.ts';
import { WORKFLOWS, type WorkflowName } from '../../src/workflows/names.ts';
import { rawCall } from '../helpers/raw-http.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';
import { minimalBody } from '../workflows/helpers.ts';

// This file's stack runs as in production: ALLOW_PRIVATE_URLS=false (https-only, public webhooks).

const ALICE = 'key-alice-create-0123456789abcdef';
const FRUGAL = 'key-frugal-create-0123456789abcd';
const PAIR = 'key-pair-create-0123456789abcdef';
const keyOf = (prefix: string, index: number) => `key-${prefix}${index}-create-0123456789abcdef`;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RECORD_KEYS = ['completedAt', 'createdAt', 'creditType', 'credits', 'error', 'id', 'input', 'isScanables', 'output', 'refunded', 'startedAt', 'status', 'updatedAt', 'userId'];


const V1_DEFAULTS = { qrStrength: 0.85, qrSteps: 16 };
const V4_DEFAULTS = { qrStrength: 1.5, batchSize: 1 };
const V4_STEPS_DEFAULTS = { qrStrength: 1.5, qrSteps: 20, batchSize: 1 };
// 1:1 SD is 768x768; qrRatio 0.6 gives a 461 px code, centred at floor((768 - 461) / 2) = 153.
const V5_COMMON = { model: 'universal', batchSize: 1, aspectRatio: '1:1', resolution: 'SD', qrCodePartern: 's1', qrRatio: 0.6, qrX: 153, qrY: 153 };

/** Per workflow: the defaults the echo must carry for a minimal body, and the cost in cents of that body. */
const EXPECTED: Record<WorkflowName, { defaults: Record<string, unknown>; cents: number }> = {
  generate_qr_art: { defaults: V1_DEFAULTS, cents: 100 },
  'generate_qr_art_v1.1': { defaults: V1_DEFAULTS, cents: 100 },
  generate_qr_art_v2: { defaults: V1_DEFAULTS, cents: 150 },
  generate_qr_art_v3a: { defaults: V1_DEFAULTS, cents: 200 },
  generate_qr_art_v3b: { defaults: V1_DEFAULTS, cents: 200 },
  generate_qr_art_v4: { defaults: V4_DEFAULTS, cents: 249 },
  generate_qr_art_v4s: { defaults: V4_STEPS_DEFAULTS, cents: 100 },
  generate_qr_art_v4real: { defaults: V4_STEPS_DEFAULTS, cents: 249 },
  generate_qr_art_v4niji: { defaults: V4_STEPS_DEFAULTS, cents: 249 },
  generate_qr_art_v4dream: { defaults: V4_STEPS_DEFAULTS, cents: 249 },
  generate_qr_art_v5: { defaults: { steps: 30, qrStrength: 1.3, cfg: 7, ...V5_COMMON }, cents: 299 },
  generate_qr_art_v5s: { defaults: { steps: 8, qrStrength: 1.3, cfg: 1, ...V5_COMMON }, cents: 149 },
  outpainting: { defaults: {}, cents: 200 },
};

const credits = (cents: number) => (cents / 100).toFixed(2);

/** alice (plenty), and per workflow i: ex<i> holding exactly two predictions' worth, sh<i> one cent less. */
function apiKeysSpec(): string {
  const entries = [`alice:${ALICE}:1000`, `frugal:${FRUGAL}:2.49`, `pair:${PAIR}:4.98`];
  WORKFLOWS.forEach((workflow, index) => {
    const cents = EXPECTED[workflow].cents;
    entries.push(`ex${index}:${keyOf('ex', index)}:${credits(2 * cents)}`);
    entries.push(`sh${index}:${keyOf('sh', index)}:${credits(2 * cents - 1)}`);
  });
  return entries.join(',');
}


function expectErrorBody(body: any, code: string): void {
  expect(body).toEqual({
    success: false,
    error: { code, message: expect.any(String), details: expect.any(Array) },
  });
  for (const detail of body.error.details) {
    expect(typeof detail.field).toBe('string');
    expect(typeof detail.rule).toBe('string');
  }
}

/** Asserts a 400 invalid_request naming `field` with `rule`. */
function expectInvalid(response: { status: number; body: any }, field: string, rule: string): void {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expectErrorBody(response.body, 'invalid_request');
  expect(response.body.error.details).toContainEqual(expect.objectContaining({ field, rule }));
}

describe('creating predictions', () => {
  let stack: TestStack;
  const post = (key: string, body: unknown) => stack.call('POST', '/v1/predictions/queue', { key, body });
  const postRaw = (key: string, body: string | Buffer, contentType?: string, chunked = false) =>
    rawCall(stack.baseUrl, 'POST', '/v1/predictions/queue', {
      headers: { 'x-api-key': key, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
      chunked,
    });
  const getWithBody = (key: string, body: string, contentType = 'application/json') =>
    rawCall(stack.baseUrl, 'GET', '/v1/predictions/queue', { headers: { 'x-api-key': key, 'content-type': contentType }, body });
  const totalDocs = async (key: string): Promise<number> => {
    const response = await stack.call('GET', '/v1/predictions', { key });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data.totalDocs;
  };

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: apiKeysSpec(), ALLOW_PRIVATE_URLS: 'false' } });
  });
  afterAll(async () => stack?.stop());

  describe('one valid create per workflow', () => {
    it.each(WORKFLOWS.map((workflow) => [workflow]))('%s is queued with the initial values of spec 2.2', async (workflow) => {
      const body = minimalBody(workflow);
      const before = Date.now();
      const response = await post(ALICE, body);
      const after = Date.now();
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual(['data', 'success']);
      expect(response.body.success).toBe(true);

      const record = response.body.data;
      expect(Object.keys(record).sort()).toEqual(RECORD_KEYS);
      expect(typeof record.id).toBe('string');
      expect(record.id.length).toBeGreaterThan(0);
      expect(record).toMatchObject({
        userId: 'alice',
        startedAt: null,
        completedAt: null,
        status: 'queued',
        output: '',
        error: null,
        refunded: false,
        creditType: 'API_CREDITS',
        isScanables: [],
        credits: EXPECTED[workflow].cents / 100,
      });
      expect(record.createdAt).toMatch(ISO);
      expect(record.updatedAt).toMatch(ISO);
      const created = Date.parse(record.createdAt);
      expect(created).toBeGreaterThanOrEqual(before - 5_000);
      expect(created).toBeLessThanOrEqual(after + 5_000);
      expect(Date.parse(record.updatedAt)).toBeGreaterThanOrEqual(created);

      // The echo: the body, the defaults, and the resolved seed; nothing else.
      expect(record.input).toEqual({ ...body, ...EXPECTED[workflow].defaults, seed: expect.any(Number) });
      expect(Number.isSafeInteger(record.input.seed)).toBe(true);
      expect(record.input.seed).toBeGreaterThanOrEqual(0);

      // Reading it back gives the same record.
      const read = await stack.call('GET', `/v1/predictions/${record.id}`, { key: ALICE });
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ success: true, data: record });
    });

    it('gives every prediction its own id', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++) ids.add((await post(ALICE, minimalBody('generate_qr_art_v4s'))).body.data.id);
      expect(ids.size).toBe(5);
    });

    it.each([0, 1, 42, Number.MAX_SAFE_INTEGER])('echoes an explicit seed %d as sent', async (seed) => {
      const response = await post(ALICE, { ...minimalBody('generate_qr_art_v4'), seed });
      expect(response.status).toBe(200);
      expect(response.body.data.input.seed).toBe(seed);
    });

    it('echoes every optional field sent, with qrSteps given as a string of digits stored as an integer', async () => {
      const body = {
        workflow: 'generate_qr_art_v4s',
        qrText: 'a koi pond',
        qrContent: 'tel:+15551234567',
        qrStrength: 2.25,
        qrSteps: '12',
        batchSize: 3,
        seed: 7,
        negativePrompt: 'blurry',
        webhook: 'https://hooks.example.com/qr',
      };
      const response = await post(ALICE, body);
      expect(response.status).toBe(200);
      expect(response.body.data.input).toEqual({ ...body, qrSteps: 12 });
      expect(response.body.data.credits).toBe(3);
    });

    it('drops fields that belong to other versions, unknown fields, and null fields', async () => {
      const cases: { body: Record<string, unknown>; dropped: string[] }[] = [
        {
          body: { ...minimalBody('generate_qr_art_v4'), qrImage: 'https://example.com/qr.png', qrSteps: 20, prompt: 'x', steps: 30, model: 'niji', image: 'https://example.com/a.jpg', foo: 1 },
          dropped: ['qrImage', 'qrSteps', 'prompt', 'steps', 'model', 'image', 'foo'],
        },
        {
          body: { ...minimalBody('generate_qr_art'), qrContent: 'https://example.com', batchSize: 2, prompt: 'x', resolution: 'HD' },
          dropped: ['qrContent', 'batchSize', 'prompt', 'resolution'],
        },
        {
          body: { ...minimalBody('generate_qr_art_v5'), qrText: 'x', qrImage: 'https://example.com/qr.png', qrSteps: 12, qrCodePattern: 's2' },
          dropped: ['qrText', 'qrImage', 'qrSteps', 'qrCodePattern'],
        },
        {
          body: { ...minimalBody('outpainting'), qrText: 'x', qrContent: 'y', batchSize: 2, qrStrength: 1 },
          dropped: ['qrText', 'qrContent', 'batchSize', 'qrStrength'],
        },
        { body: { ...minimalBody('generate_qr_art_v4s'), negativePrompt: null, webhook: null, seed: null }, dropped: ['negativePrompt', 'webhook'] },
      ];
      for (const { body, dropped } of cases) {
        const response = await post(ALICE, body);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const input = response.body.data.input;
        for (const field of dropped) expect(input, `${body.workflow} ${field}`).not.toHaveProperty(field);
        expect(Number.isSafeInteger(input.seed)).toBe(true);
        // A dropped field has no effect on the price either.
        expect(response.body.data.credits).toBe(EXPECTED[body.workflow as WorkflowName].cents / 100);
      }
    });
  });

  describe('costs', () => {
    it.each([
      ['v4 with batchSize 2 (2.49 per image)', { ...minimalBody('generate_qr_art_v4'), batchSize: 2 }, 4.98],
      ['v4 with batchSize 4', { ...minimalBody('generate_qr_art_v4'), batchSize: 4 }, 9.96],
      ['v4s with batchSize 4 (1 per image)', { ...minimalBody('generate_qr_art_v4s'), batchSize: 4 }, 4],
      ['v4real with batchSize 3', { ...minimalBody('generate_qr_art_v4real'), batchSize: 3 }, 7.47],
      ['v5 HD with enhance face and batchSize 2', { ...minimalBody('generate_qr_art_v5'), resolution: 'HD', enhance: 'face', batchSize: 2 }, 9.98],
      ['v5s UltraHD', { ...minimalBody('generate_qr_art_v5s'), resolution: 'UltraHD' }, 5.96],
      ['outpainting multi_shots', { ...minimalBody('outpainting'), type: 'multi_shots' }, 4],
    ])('%s costs the documented credits', async (_name, body, expected) => {
      const response = await post(ALICE, body);
      expect(response.status).toBe(200);
      expect(response.body.data.credits).toBe(expected);
    });

    it('charges 2.49 per v4: a balance of 4.98 pays for two, and the third gets 402 insufficient_credits', async () => {
      const v4 = minimalBody('generate_qr_art_v4');
      expect((await post(PAIR, v4)).status).toBe(200);
      expect((await post(PAIR, v4)).status).toBe(200);
      const third = await post(PAIR, v4);
      expect(third.status).toBe(402);
      expectErrorBody(third.body, 'insufficient_credits');
      expect(third.body.error.details).toContainEqual(expect.objectContaining({ field: expect.any(String), rule: expect.any(String) }));
      expect(third.body.error.message).toBe('this prediction costs 2.49 credits and the balance is 0');
      // Nothing cheaper fits either: the balance is below 1.00 (in fact 0).
      const cheapest = await post(PAIR, minimalBody('generate_qr_art_v4s'));
      expect(cheapest.status).toBe(402);
      expect(cheapest.body.error.message).toBe('this prediction costs 1 credit and the balance is 0');
      expect(await totalDocs(PAIR)).toBe(2);
    });

    // ex<i> holds 2 x cost: two succeed (charge <= cost); sh<i> holds 2 x cost - 0.01: the second
    // fails (charge >= cost). Together: each create takes exactly the cost.
    it.each(WORKFLOWS.map((workflow, index) => [workflow, index] as const))('%s takes exactly its cost from the balance', async (workflow, index) => {
      const body = minimalBody(workflow);
      const exact = keyOf('ex', index);
      expect((await post(exact, body)).status).toBe(200);
      expect((await post(exact, body)).status).toBe(200);
      const exhausted = await post(exact, body);
      expect(exhausted.status).toBe(402);
      expectErrorBody(exhausted.body, 'insufficient_credits');
      expect(await totalDocs(exact)).toBe(2);

      const short = keyOf('sh', index);
      expect((await post(short, body)).status).toBe(200);
      const refused = await post(short, body);
      expect(refused.status).toBe(402);
      expectErrorBody(refused.body, 'insufficient_credits');
      expect(await totalDocs(short)).toBe(1);
    });
  });

  describe('GET /v1/predictions/queue', () => {
    it('creates an outpainting prediction from a JSON body', async () => {
      const body = minimalBody('outpainting');
      const response = await getWithBody(ALICE, JSON.stringify(body));
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.success).toBe(true);
      expect(Object.keys(response.body.data).sort()).toEqual(RECORD_KEYS);
      expect(response.body.data).toMatchObject({ userId: 'alice', status: 'queued', output: '', error: null, credits: 2, input: { ...body, seed: expect.any(Number) } });
      const read = await stack.call('GET', `/v1/predictions/${response.body.data.id}`, { key: ALICE });
      expect(read.body.data).toEqual(response.body.data);
    });

    it('takes a body that starts with a UTF-8 byte-order mark, as POST does', async () => {
      const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(minimalBody('outpainting')))]);
      const posted = await postRaw(ALICE, body, 'application/json');
      expect(posted.status, JSON.stringify(posted.body)).toBe(200);
      const got = await rawCall(stack.baseUrl, 'GET', '/v1/predictions/queue', { headers: { 'x-api-key': ALICE, 'content-type': 'application/json' }, body });
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      expect(got.body.data).toMatchObject({ status: 'queued', input: { workflow: 'outpainting' } });
    });

    it('HEAD with an outpainting body is a 405 naming GET and POST, and creates and charges nothing', async () => {
      const before = await totalDocs(ALICE);
      const balance = await balanceOf(stack.api.db, 'alice');
      const head = await rawCall(stack.baseUrl, 'HEAD', '/v1/predictions/queue', {
        headers: { 'x-api-key': ALICE, 'content-type': 'application/json' },
        body: JSON.stringify(minimalBody('outpainting')),
      });
      expect(head.status).toBe(405);
      expect(head.headers.allow).toBe('GET, POST');
      expect(await totalDocs(ALICE)).toBe(before);
      expect(await balanceOf(stack.api.db, 'alice')).toBe(balance);
    });

    it.each(WORKFLOWS.filter((workflow) => workflow !== 'outpainting').map((workflow) => [workflow]))('answers 405 to a %s body', async (workflow) => {
      const response = await getWithBody(ALICE, JSON.stringify(minimalBody(workflow)));
      expect(response.status).toBe(405);
      expectErrorBody(response.body, 'method_not_allowed');
    });

    it('answers 405 without a body, 400 to malformed JSON, 415 to text/plain or no Content-Type, 400 to an invalid outpainting body', async () => {
      const none = await rawCall(stack.baseUrl, 'GET', '/v1/predictions/queue', { headers: { 'x-api-key': ALICE } });
      expect(none.status).toBe(405);
      expect(none.headers.allow).toBe('GET, POST');
      expectErrorBody(none.body, 'method_not_allowed');

      const malformed = await getWithBody(ALICE, '{"workflow":"outpainting",');
      expect(malformed.status).toBe(400);
      expectErrorBody(malformed.body, 'invalid_json');

      const textPlain = await getWithBody(ALICE, JSON.stringify(minimalBody('outpainting')), 'text/plain');
      expect(textPlain.status).toBe(415);
      expectErrorBody(textPlain.body, 'unsupported_media_type');
      // As on POST: a body without Content-Type is not taken for JSON (and is not charged).
      const before = await totalDocs(ALICE);
      const untyped = await rawCall(stack.baseUrl, 'GET', '/v1/predictions/queue', { headers: { 'x-api-key': ALICE }, body: JSON.stringify(minimalBody('outpainting')) });
      expect(untyped.status).toBe(415);
      expectErrorBody(untyped.body, 'unsupported_media_type');
      expect(await totalDocs(ALICE)).toBe(before);

      const { image: _image, ...withoutImage } = minimalBody('outpainting');
      expectInvalid(await getWithBody(ALICE, JSON.stringify(withoutImage)), 'image', 'required');
    });
  });

  describe('rejected bodies', () => {
    it.each([
      ['an unterminated object', '{"workflow":"generate_qr_art_v4",'],
      ['single quotes', "{'workflow':'generate_qr_art_v4'}"],
      ['a trailing comma', '{"workflow":"generate_qr_art_v4",}'],
      ['a bare word', 'workflow'],
      ['two objects', '{}{}'],
      ['an empty body', ''],
    ])('answer 400 invalid_json for %s', async (_name, raw) => {
      const response = await postRaw(ALICE, raw, 'application/json');
      expect(response.status).toBe(400);
      expectErrorBody(response.body, 'invalid_json');
    });

    it('answer 400 for bytes that are not UTF-8 (a Latin-1 "café"), whatever the charset says, on POST and GET alike, and charge nothing', async () => {
      const body = minimalBody('generate_qr_art_v4');
      const latin1 = Buffer.from(JSON.stringify({ ...body, qrContent: 'café' }), 'latin1');
      const before = await totalDocs(ALICE);
      for (const response of [
        await postRaw(ALICE, latin1, 'application/json'),
        await postRaw(ALICE, latin1, 'application/json; charset=iso-8859-1'),
        await rawCall(stack.baseUrl, 'GET', '/v1/predictions/queue', { headers: { 'x-api-key': ALICE, 'content-type': 'application/json' }, body: latin1 }),
      ]) {
        expect(response.status, JSON.stringify(response.body)).toBe(400);
        expectErrorBody(response.body, 'invalid_json');
        expect(response.body.error.details).toContainEqual(expect.objectContaining({ field: '', rule: 'utf8' }));
      }
      expect(await totalDocs(ALICE)).toBe(before);
      // The same text as UTF-8 is taken, and keeps its é.
      const utf8 = await postRaw(ALICE, Buffer.from(JSON.stringify({ ...body, qrContent: 'café' }), 'utf8'), 'application/json; charset=iso-8859-1');
      expect(utf8.status, JSON.stringify(utf8.body)).toBe(200);
      expect(utf8.body.data.input.qrContent).toBe('café');
    });

    it('ignore a __proto__ or constructor.prototype key like any unknown field, on POST and GET alike', async () => {
      // Nothing under such a key is read: the required field it carries is still missing.
      const { qrText: _text, ...withoutText } = minimalBody('generate_qr_art_v4');
      expectInvalid(await postRaw(ALICE, `{"__proto__":{"qrText":"a harbour"},${JSON.stringify(withoutText).slice(1)}`, 'application/json'), 'qrText', 'required');
      const { image: _image, ...withoutImage } = minimalBody('outpainting');
      const poisoned = `{"__proto__":{"image":"https://example.com/a.png"},${JSON.stringify(withoutImage).slice(1)}`;
      expectInvalid(await postRaw(ALICE, poisoned, 'application/json'), 'image', 'required');
      expectInvalid(await getWithBody(ALICE, poisoned), 'image', 'required');
      // A valid body with such keys is created, on either method.
      const before = await totalDocs(ALICE);
      const extra = `{"__proto__":{"admin":true},"constructor":{"prototype":{"admin":true}},${JSON.stringify(minimalBody('outpainting')).slice(1)}`;
      expect((await postRaw(ALICE, extra, 'application/json')).status).toBe(200);
      expect((await getWithBody(ALICE, extra)).status).toBe(200);
      expect(await totalDocs(ALICE)).toBe(before + 2);
      expect(({} as Record<string, unknown>).admin).toBeUndefined();
    });

    it('take the same Content-Types on POST and GET: application/json with parameters, and no +json type', async () => {
      const body = JSON.stringify(minimalBody('outpainting'));
      for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
        expect((await postRaw(ALICE, body, contentType)).status, contentType).toBe(200);
        expect((await getWithBody(ALICE, body, contentType)).status, contentType).toBe(200);
      }
      const before = await totalDocs(ALICE);
      for (const contentType of ['application/problem+json', 'application/vnd.api+json', 'application/json-patch+json']) {
        for (const response of [await postRaw(ALICE, body, contentType), await getWithBody(ALICE, body, contentType)]) {
          expect(response.status, contentType).toBe(415);
          expectErrorBody(response.body, 'unsupported_media_type');
        }
      }
      expect(await totalDocs(ALICE)).toBe(before);
    });

    it.each([
      'text/plain',
      'text/plain; charset=utf-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      'application/xml',
      'application/octet-stream',
      'image/png',
    ])('answer 415 unsupported_media_type for Content-Type %s', async (contentType) => {
      const response = await postRaw(ALICE, JSON.stringify(minimalBody('generate_qr_art_v4')), contentType);
      expect(response.status).toBe(415);
      expectErrorBody(response.body, 'unsupported_media_type');
    });

    it('answer 415 for a body without Content-Type', async () => {
      const response = await postRaw(ALICE, JSON.stringify(minimalBody('generate_qr_art_v4')));
      expect(response.status).toBe(415);
      expectErrorBody(response.body, 'unsupported_media_type');
    });

    it('answer 413 payload_too_large above 64 KiB, with or without content-length, and not at exactly 64 KiB', async () => {
      const sized = (bytes: number) => {
        const base = JSON.stringify({ ...minimalBody('generate_qr_art_v4'), negativePrompt: '' });
        return base.replace('"negativePrompt":""', `"negativePrompt":"${'x'.repeat(bytes - base.length)}"`);
      };
      expect(Buffer.byteLength(sized(65_537))).toBe(65_537);

      const over = await postRaw(ALICE, sized(65_537), 'application/json');
      expect(over.status).toBe(413);
      expectErrorBody(over.body, 'payload_too_large');

      const chunked = await postRaw(ALICE, sized(200_000), 'application/json', true);
      expect(chunked.status).toBe(413);
      expectErrorBody(chunked.body, 'payload_too_large');

      // At the limit the body is read, then refused by validation (negativePrompt is too long).
      expectInvalid(await postRaw(ALICE, sized(65_536), 'application/json'), 'negativePrompt', 'max');
    });
  });

  describe('validation errors', () => {
    const v4 = minimalBody('generate_qr_art_v4');
    it.each([
      ['qrStrength 3.1', { ...v4, qrStrength: 3.1 }, 'qrStrength', 'max'],
      ['qrStrength -0.1', { ...v4, qrStrength: -0.1 }, 'qrStrength', 'min'],
      ['qrStrength as a string', { ...v4, qrStrength: '1.5' }, 'qrStrength', 'type'],
      ['seed -1', { ...v4, seed: -1 }, 'seed', 'min'],
      ['seed 2^53', { ...v4, seed: 2 ** 53 }, 'seed', 'max'],
      ['seed 1.5', { ...v4, seed: 1.5 }, 'seed', 'integer'],
      ['batchSize 5', { ...v4, batchSize: 5 }, 'batchSize', 'max'],
      ['batchSize 0', { ...v4, batchSize: 0 }, 'batchSize', 'min'],
      ['batchSize 2.5', { ...v4, batchSize: 2.5 }, 'batchSize', 'integer'],
      ['qrSteps 21 for v1', { ...minimalBody('generate_qr_art'), qrSteps: 21 }, 'qrSteps', 'max'],
      ['qrSteps 9 for v1', { ...minimalBody('generate_qr_art'), qrSteps: 9 }, 'qrSteps', 'min'],
      ['qrSteps 61 for v4s', { ...minimalBody('generate_qr_art_v4s'), qrSteps: 61 }, 'qrSteps', 'max'],
      ['qrSteps "abc"', { ...minimalBody('generate_qr_art_v4s'), qrSteps: 'abc' }, 'qrSteps', 'integer'],
      ['no qrContent for v4', { workflow: 'generate_qr_art_v4', qrText: 'x' }, 'qrContent', 'required'],
      ['no qrImage for v1', { workflow: 'generate_qr_art', qrText: 'x' }, 'qrImage', 'required'],
      ['no qrText for v4', { workflow: 'generate_qr_art_v4', qrContent: 'x' }, 'qrText', 'required'],
      ['no prompt for v5', { workflow: 'generate_qr_art_v5', qrContent: 'x' }, 'prompt', 'required'],
      ['a blank qrText', { ...v4, qrText: '   ' }, 'qrText', 'required'],
      ['qrText as a number', { ...v4, qrText: 123 }, 'qrText', 'type'],
      ['qrText over 2000 characters', { ...v4, qrText: 'x'.repeat(2001) }, 'qrText', 'max'],
      ['qrImage that is not a URL', { ...minimalBody('generate_qr_art'), qrImage: 'not a url' }, 'qrImage', 'url'],
      ['qrImage on ftp', { ...minimalBody('generate_qr_art'), qrImage: 'ftp://example.com/qr.png' }, 'qrImage', 'url'],
      ['qrContent too big for a QR code', { ...v4, qrContent: 'é'.repeat(1000) }, 'qrContent', 'qr_capacity'],
      ['an unknown v5 model', { ...minimalBody('generate_qr_art_v5'), model: 'picasso' }, 'model', 'enum'],
      ['an unknown preset', { ...minimalBody('generate_qr_art_v5'), preset: 'baroque' }, 'preset', 'enum'],
      ['a v5 qrX outside the canvas', { ...minimalBody('generate_qr_art_v5'), qrX: 308 }, 'qrX', 'canvas_bounds'],
      ['an outpainting type', { ...minimalBody('outpainting'), type: 'two_shots' }, 'type', 'enum'],
      ['outpainting without padding', { ...minimalBody('outpainting'), padding_left: 0, padding_right: 0 }, '', 'min_total'],
      ['a webhook on http', { ...v4, webhook: 'http://example.com/hook' }, 'webhook', 'https_url'],
      ['a webhook that is not a URL', { ...v4, webhook: 'hook' }, 'webhook', 'https_url'],
      ['a webhook on loopback', { ...v4, webhook: 'https://127.0.0.1/hook' }, 'webhook', 'public_host'],
      ['a webhook on localhost', { ...v4, webhook: 'https://localhost:8443/hook' }, 'webhook', 'public_host'],
      ['a webhook on the metadata address', { ...v4, webhook: 'https://169.254.169.254/latest' }, 'webhook', 'public_host'],
      ['a webhook on IPv6 loopback', { ...v4, webhook: 'https://[::1]/hook' }, 'webhook', 'public_host'],
      ['a NUL in qrText', { ...v4, qrText: 'a\u0000b' }, 'qrText', 'characters'],
      ['a NUL in negativePrompt', { ...v4, negativePrompt: '\u0000' }, 'negativePrompt', 'characters'],
      ['a NUL at the end of a webhook URL', { ...v4, webhook: 'https://example.com/hook\u0000' }, 'webhook', 'characters'],
      ['a lone surrogate in qrText', { ...v4, qrText: 'a \ud800 b' }, 'qrText', 'characters'],
      ['a lone low surrogate in prompt', { ...minimalBody('generate_qr_art_v5'), prompt: '\udc00' }, 'prompt', 'characters'],
      ['a NUL in the outpainting image URL', { ...minimalBody('outpainting'), image: 'https://example.com/a.jpg\u0000' }, 'image', 'characters'],
    ])('answer 400 naming the field and rule for %s', async (_name, body, field, rule) => {
      expectInvalid(await post(ALICE, body), field, rule);
    });

    it('accept a well-formed surrogate pair (emoji) in free text', async () => {
      const response = await post(ALICE, { ...v4, qrText: 'a 🐉 in the clouds', negativePrompt: '👎' });
      expect(response.status).toBe(200);
      expect(response.body.data.input.qrText).toBe('a 🐉 in the clouds');
    });

    it('answer 400 unknown_workflow listing every workflow name', async () => {
      const response = await post(ALICE, { ...v4, workflow: 'generate_qr_art_v6' });
      expectInvalid(response, 'workflow', 'unknown_workflow');
      const text = JSON.stringify(response.body.error);
      for (const workflow of WORKFLOWS) expect(text).toContain(workflow);
    });

    it.each([
      ['no workflow', { qrText: 'x', qrContent: 'y' }, 'required'],
      ['a numeric workflow', { ...v4, workflow: 4 }, 'type'],
    ])('answer 400 on workflow for %s', async (_name, body, rule) => {
      expectInvalid(await post(ALICE, body), 'workflow', rule);
    });

    it.each([
      ['an array', []],
      ['a string', 'generate_qr_art_v4'],
      ['a number', 42],
      ['null', null],
    ])('answer 400 for a body that is %s', async (_name, body) => {
      const response = await postRaw(ALICE, JSON.stringify(body), 'application/json');
      expect(response.status).toBe(400);
      expectErrorBody(response.body, 'invalid_request');
      expect(response.body.error.details).toContainEqual(expect.objectContaining({ field: '', rule: 'type' }));
    });

    it('report every invalid field at once', async () => {
      const response = await post(ALICE, { workflow: 'generate_qr_art_v4', qrText: 7, qrStrength: 9, batchSize: 0, seed: -3 });
      expect(response.status).toBe(400);
      const pairs = response.body.error.details.map((detail: { field: string; rule: string }) => `${detail.field}/${detail.rule}`);
      expect(pairs).toEqual(expect.arrayContaining(['qrText/type', 'qrContent/required', 'qrStrength/max', 'batchSize/min', 'seed/min']));
    });
  });

  it('never charges for a rejected create', async () => {
    // frugal holds exactly one v4 (2.49).
    const v4 = minimalBody('generate_qr_art_v4');
    const rejected: { status: number }[] = [
      await post(FRUGAL, { ...v4, qrStrength: 3.1 }),
      await post(FRUGAL, { ...v4, batchSize: 5 }),
      await post(FRUGAL, { ...v4, webhook: 'http://example.com/hook' }),
      await post(FRUGAL, { ...v4, qrText: 'a\u0000b' }),
      await post(FRUGAL, { ...v4, workflow: 'nope' }),
      await postRaw(FRUGAL, '{"workflow":', 'application/json'),
      await postRaw(FRUGAL, JSON.stringify(v4), 'text/plain'),
      await postRaw(FRUGAL, JSON.stringify({ ...v4, qrText: 'x'.repeat(70_000) }), 'application/json'),
      await getWithBody(FRUGAL, JSON.stringify(v4)),
      // Costs more than the balance: refused whole, nothing taken.
      await post(FRUGAL, { ...v4, batchSize: 2 }),
    ];
    expect(rejected.map((response) => response.status)).toEqual([400, 400, 400, 400, 400, 400, 415, 413, 405, 402]);
    expect(await totalDocs(FRUGAL)).toBe(0);

    expect((await post(FRUGAL, v4)).status).toBe(200);
    expect((await post(FRUGAL, v4)).status).toBe(402);
    expect(await totalDocs(FRUGAL)).toBe(1);
  });
});
