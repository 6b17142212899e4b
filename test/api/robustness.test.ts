import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOWS, type WorkflowName } from '../../src/workflows/names.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

const RACER = 'key-racer-robust-0123456789abcdef';
const FUZZER = 'key-fuzzer-robust-0123456789abcde';
const DEV = 'key-dev-robust-0123456789abcdef00';

const V4 = { workflow: 'generate_qr_art_v4', qrText: 'a harbour at night', qrContent: 'https://example.com' };
const PARALLEL = 200;
const AFFORDABLE = 150; // 150 x 2.49 = 373.5 credits

/** The error code each rejection status must carry. */
const CODES: Record<number, string[]> = {
  400: ['invalid_request', 'invalid_json'],
  402: ['insufficient_credits'],
  404: ['not_found'],
  405: ['method_not_allowed'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
};

interface RawResponse {
  status: number;
  text: string;
  body: any;
}

/** node:http: raw bytes (invalid UTF-8), any content-type or none, a body on GET. */
function rawCall(baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const allHeaders: Record<string, string | number> = { ...headers };
  if (body !== undefined) allHeaders['content-length'] = body.length;
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest({ host: url.hostname, port: url.port, path, method, headers: allHeaders }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, body: parsed });
      });
    });
    // An early answer (413) may close the connection before the whole body was written.
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.end(body);
  });
}

/** Why `response` is not a documented rejection with one of `statuses`, or undefined when it is. */
function rejectionProblem(response: RawResponse, statuses: readonly number[]): string | undefined {
  if (!statuses.includes(response.status)) return `status ${response.status}, expected one of ${statuses.join('/')}`;
  const body = response.body;
  if (typeof body !== 'object' || body === null) return 'body is not JSON';
  if (JSON.stringify(Object.keys(body).sort()) !== '["error","success"]' || body.success !== false) return 'body is not {success:false,error}';
  const error = body.error;
  if (typeof error !== 'object' || error === null) return 'error is not an object';
  if (JSON.stringify(Object.keys(error).sort()) !== '["code","details","message"]') return `error keys ${Object.keys(error).join(',')}`;
  if (!CODES[response.status]?.includes(error.code)) return `code ${error.code} for status ${response.status}`;
  if (typeof error.message !== 'string' || error.message.length === 0) return 'message is not a non-empty string';
  if (!Array.isArray(error.details)) return 'details is not an array';
  for (const detail of error.details) {
    if (typeof detail !== 'object' || detail === null || typeof detail.field !== 'string' || typeof detail.rule !== 'string') return 'a detail lacks field/rule strings';
    if (detail.message !== undefined && typeof detail.message !== 'string') return 'a detail message is not a string';
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Deterministic fuzz input
// ---------------------------------------------------------------------------


class Fuzz {
  readonly random: () => number;
  constructor(seed: number) {
    this.random = mulberry32(seed);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
  /** Random text: ASCII, controls, NUL, lone and paired surrogates, combining marks, RTL, emoji. */
  string(maxLength = 24): string {
    const pieces = ['a', 'Z', '9', ' ', '"', '\\', '/', '\u0000', '\u0001', '\n', '\t', '\ud800', '\udfff', '\u00e9', '\u0301', '\u202e', '\ufeff', '\uffff', '😀', '𝕏', '<', '{', '%', '$'];
    let out = '';
    const length = this.int(0, maxLength);
    for (let i = 0; i < length; i++) out += this.pick(pieces);
    return out;
  }
  number(): number {
    return this.pick([0, -0, 1, -1, 0.5, 3.1, -3.1, 2 ** 31, -(2 ** 31), 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 1e308, -1e308, 5e-324, 1e21, this.random() * 1e6]);
  }
  /** Any JSON value, nested up to `depth`; its strings are never workflow names. */
  json(depth = 3): unknown {
    const kind = this.int(0, depth > 0 ? 6 : 4);
    switch (kind) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.number();
      case 3:
      case 4:
        return this.string();
      case 5:
        return Array.from({ length: this.int(0, 4) }, () => this.json(depth - 1));
      default: {
        const object: Record<string, unknown> = {};
        for (let i = this.int(0, 6); i > 0; i--) object[this.chance(0.6) ? this.pick(FIELD_NAMES) : this.string(8)] = this.json(depth - 1);
        return object;
      }
    }
  }
  /** A value that no field of any workflow accepts (wrong type, or a number beyond every range). */
  invalidValue(): unknown {
    return this.pick<() => unknown>([
      () => true,
      () => false,
      () => ({}),
      () => [],
      () => [this.json(2)],
      () => ({ nested: this.json(3) }),
      () => 1e308,
      () => -1e308,
      () => 2 ** 53 + 2,
      () => -(2 ** 53),
    ])();
  }
  bytes(length: number): Buffer {
    return Buffer.from(Array.from({ length }, () => this.int(0, 255)));
  }
}

/** A valid body with (nearly) every optional field, for each workflow. */
function fullBody(workflow: WorkflowName): Record<string, unknown> {
  const common = { seed: 5, negativePrompt: 'no text', webhook: 'https://hooks.example.com/qr' };
  if (workflow === 'outpainting') {
    return {
      workflow,
      image: 'https://example.com/photo.jpg',
      prompt: 'a meadow',
      image_width: 512,
      image_height: 512,
      padding_left: 64,
      padding_right: 64,
      padding_top: 32,
      padding_bottom: 0,
      type: 'multi_shots',
      ...common,
    };
  }
  if (workflow === 'generate_qr_art_v5' || workflow === 'generate_qr_art_v5s') {
    const v5 = workflow === 'generate_qr_art_v5';
    return {
      workflow,
      prompt: 'a dragon',
      qrContent: 'https://example.com',
      steps: v5 ? 30 : 8,
      qrStrength: 1.2,
      cfg: v5 ? 7 : 1.5,
      model: 'niji',
      batchSize: 2,
      enhance: 'face',
      aspectRatio: '16:9',
      resolution: 'HD',
      qrCodePartern: 'rd2',
      qrX: 10,
      qrY: 10,
      qrRatio: 0.5,
      preset: 'anime',
      ...common,
    };
  }
  if (['generate_qr_art', 'generate_qr_art_v1.1', 'generate_qr_art_v2', 'generate_qr_art_v3a', 'generate_qr_art_v3b'].includes(workflow)) {
    return { workflow, qrText: 'a castle', qrImage: 'https://example.com/qr.png', qrStrength: 1, qrSteps: 15, ...common };
  }
  // v4 takes no qrSteps: every field here is one the workflow reads.
  const steps = workflow === 'generate_qr_art_v4' ? {} : { qrSteps: 30 };
  return { workflow, qrText: 'a castle', qrContent: 'https://example.com', qrStrength: 2, ...steps, batchSize: 2, ...common };
}

const FIELD_NAMES = [...new Set(WORKFLOWS.flatMap((workflow) => Object.keys(fullBody(workflow)))), 'qrImage', 'qrSteps'];

interface Case {
  kind: string;
  contentType: string | null;
  body: Buffer;
  /** Statuses this case may get. */
  expect: readonly number[];
  method?: 'POST' | 'GET';
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/**
 * A valid body of a random workflow, with random fields dropped, fields of other versions added,
 * and then 1..3 of the fields it reads set to values no field accepts: it can never be valid.
 */
function mutatedBody(fuzz: Fuzz, workflows: readonly WorkflowName[] = WORKFLOWS): Record<string, unknown> {
  const workflow = fuzz.pick(workflows);
  const body = fullBody(workflow);
  const readable = Object.keys(body);
  for (const key of readable) if (key !== 'workflow' && fuzz.chance(0.3)) delete body[key];
  for (let i = fuzz.int(0, 3); i > 0; i--) body[fuzz.pick(FIELD_NAMES)] = fuzz.json(2);
  for (let i = fuzz.int(1, 3); i > 0; i--) body[fuzz.pick(readable)] = fuzz.invalidValue();
  return body;
}

function fuzzCases(fuzz: Fuzz): Case[] {
  const cases: Case[] = [];
  const add = (count: number, make: () => Case) => {
    for (let i = 0; i < count; i++) cases.push(make());
  };
  const JSON_TYPE = 'application/json';

  // Random JSON values of every type (never a valid workflow name anywhere).
  add(300, () => ({ kind: 'random json', contentType: JSON_TYPE, body: json(fuzz.json(4)), expect: [400] }));

  // Real bodies with dropped fields, fields of other versions, and wrong-typed / out-of-range values.
  add(600, () => ({ kind: 'mutated body', contentType: fuzz.pick([JSON_TYPE, 'application/json; charset=utf-8']), body: json(mutatedBody(fuzz)), expect: [400] }));

  // Numbers JSON.stringify cannot write: overflow to Infinity, beyond every range.
  add(150, () => {
    const body = fullBody(fuzz.pick(WORKFLOWS));
    body[fuzz.pick(Object.keys(body))] = '__NUMBER__';
    const token = fuzz.pick(['1e400', '-1e400', '1e99999', '123456789012345678901234567890', '-9007199254740993', '-1E+400']);
    return { kind: 'huge number', contentType: JSON_TYPE, body: Buffer.from(JSON.stringify(body).replace('"__NUMBER__"', token)), expect: [400] };
  });

  // Broken JSON text: strict prefixes of a valid body, junk before or after it.
  add(150, () => {
    const text = JSON.stringify(fullBody(fuzz.pick(WORKFLOWS)));
    const variant = fuzz.int(0, 2);
    const broken =
      variant === 0
        ? text.slice(0, fuzz.int(1, text.length - 1))
        : variant === 1
          ? fuzz.pick([')', ']', 'x', ',', '\u0000', '#']) + text
          : text + fuzz.pick(['}', ']', ',', 'x', '{}', ' 1']);
    return { kind: 'broken json', contentType: JSON_TYPE, body: Buffer.from(broken), expect: [400] };
  });

  // Invalid UTF-8 and binary garbage, alone or inside an otherwise well-formed (but invalid) body.
  add(150, () => {
    if (fuzz.chance(0.5)) return { kind: 'garbage bytes', contentType: JSON_TYPE, body: fuzz.bytes(fuzz.int(1, 400)), expect: [400] };
    const head = Buffer.from('{"workflow":"generate_qr_art_v4","qrContent":"https://example.com","batchSize":99,"qrText":"');
    const garbage = Buffer.from(fuzz.bytes(fuzz.int(1, 64)).map((byte) => (byte === 0x22 || byte === 0x5c ? 0xff : byte | 0x80)));
    return { kind: 'invalid utf-8 in a string', contentType: JSON_TYPE, body: Buffer.concat([head, garbage, Buffer.from('"}')]), expect: [400] };
  });

  // Valid bodies in a media type other than JSON, or with none.
  add(60, () => ({
    kind: 'wrong content-type',
    contentType: fuzz.pick([null, 'text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/octet-stream', 'image/png', 'text/html']),
    body: json(fullBody(fuzz.pick(WORKFLOWS))),
    expect: [415],
  }));

  // Above the 64 KiB limit, valid JSON or not.
  add(20, () => {
    const size = fuzz.int(65_537, 150_000);
    const body = fuzz.chance(0.5) ? Buffer.from(JSON.stringify({ ...fullBody('generate_qr_art_v4'), junk: 'x'.repeat(size) })) : fuzz.bytes(size);
    return { kind: 'oversized', contentType: JSON_TYPE, body, expect: [413] };
  });

  // Prototype poisoning, at the top or nested.
  add(30, () => {
    const poison = fuzz.pick(['{"__proto__":{"isAdmin":true}}', '{"constructor":{"prototype":{"isAdmin":true}}}']);
    const where = fuzz.int(0, 2);
    const text =
      where === 0
        ? poison
        : where === 1
          ? `{"workflow":"generate_qr_art_v4","qrText":"x","qrContent":"y","batchSize":${poison}}`
          : `{"workflow":"generate_qr_art_v4","qrText":"x","qrContent":"y","negativePrompt":[1,${poison}],"batchSize":9}`;
    return { kind: 'prototype poisoning', contentType: JSON_TYPE, body: Buffer.from(text), expect: [400] };
  });

  // Deep nesting within the size limit.
  add(40, () => {
    const [open, close] = fuzz.chance(0.5) ? ['[', ']'] : ['{"a":', '}'];
    // Deep, yet under the 64 KiB limit.
    const depth = fuzz.int(500, Math.floor(60_000 / (open.length + close.length)));
    const nested = open.repeat(depth) + '1' + close.repeat(depth);
    const text = fuzz.chance(0.5) ? nested : `{"workflow":"generate_qr_art_v4","qrContent":"x","qrText":${nested}}`;
    return { kind: 'deep nesting', contentType: JSON_TYPE, body: Buffer.from(text), expect: [400] };
  });

  // GET /v1/predictions/queue: a body that is not outpainting is a 405, an invalid outpainting body a 400.
  add(60, () => ({ kind: 'GET random json', method: 'GET', contentType: JSON_TYPE, body: json(fuzz.json(3)), expect: [405] }));
  add(60, () => {
    const body = mutatedBody(fuzz, ['outpainting']);
    return { kind: 'GET mutated outpainting', method: 'GET', contentType: JSON_TYPE, body: json(body), expect: [body.workflow === 'outpainting' ? 400 : 405] };
  });

  return cases;
}

async function inPool<T>(items: readonly T[], width: number, run: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const index = next++;
        await run(items[index]!, index);
      }
    }),
  );
}

describe('robustness', () => {
  let stack: TestStack;
  const totalDocs = async (key: string): Promise<number> => {
    const response = await stack.call('GET', '/v1/predictions', { key });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data.totalDocs;
  };

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `racer:${RACER}:${(AFFORDABLE * 2.49).toFixed(2)},fuzzer:${FUZZER}:2.49,dev:${DEV}:10` } });
  });
  afterAll(async () => stack?.stop());

  it(`lets exactly ${AFFORDABLE} of ${PARALLEL} parallel creates through when the balance covers ${AFFORDABLE}, and ends at 0`, async () => {
    const responses = await Promise.all(Array.from({ length: PARALLEL }, (_, n) => stack.call('POST', '/v1/predictions/queue', { key: RACER, body: { ...V4, seed: n } })));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(AFFORDABLE);
    expect(statuses.filter((status) => status === 402)).toHaveLength(PARALLEL - AFFORDABLE);
    for (const response of responses.filter((r) => r.status === 402)) {
      expect(response.body).toEqual({ success: false, error: { code: 'insufficient_credits', message: expect.any(String), details: expect.any(Array) } });
    }
    const accepted = responses.filter((r) => r.status === 200).map((r) => r.body.data);
    expect(new Set(accepted.map((record) => record.id)).size).toBe(AFFORDABLE);
    expect(accepted.every((record) => record.credits === 2.49 && record.status === 'queued')).toBe(true);

    // The balance is 0: not even the cheapest workflow fits.
    expect((await stack.call('POST', '/v1/predictions/queue', { key: RACER, body: V4 })).status).toBe(402);
    expect((await stack.call('POST', '/v1/predictions/queue', { key: RACER, body: { ...V4, workflow: 'generate_qr_art_v4s' } })).status).toBe(402);

    // Exactly the accepted ones were recorded, and they add up to the whole balance.
    const listed: { id: string; credits: number }[] = [];
    for (let offset = 0; offset < 1000; offset += 100) {
      const page = (await stack.call('GET', `/v1/predictions?limit=100&offset=${offset}`, { key: RACER })).body.data;
      expect(page.totalDocs).toBe(AFFORDABLE);
      listed.push(...page.docs);
      if (!page.hasNextPage) break;
    }
    expect(listed.map((doc) => doc.id).sort()).toEqual(accepted.map((record) => record.id).sort());
    expect(listed.reduce((cents, doc) => cents + Math.round(doc.credits * 100), 0)).toBe(AFFORDABLE * 249);
  });

  it('answers ~1500 random and malformed create bodies with documented 4xx errors, charging nothing', async () => {
    const seed = Number(process.env.FUZZ_SEED ?? 20240611);
    const cases = fuzzCases(new Fuzz(seed));
    expect(cases.length).toBeGreaterThanOrEqual(1500);
    const failures: string[] = [];
    await inPool(cases, 6, async (fuzzCase, index) => {
      const headers: Record<string, string> = { 'x-api-key': FUZZER };
      if (fuzzCase.contentType) headers['content-type'] = fuzzCase.contentType;
      const response = await rawCall(stack.baseUrl, fuzzCase.method ?? 'POST', '/v1/predictions/queue', headers, fuzzCase.body);
      const problem = response.status >= 500 ? `server error ${response.status}` : rejectionProblem(response, fuzzCase.expect);
      if (problem) {
        failures.push(`#${index} ${fuzzCase.kind}: ${problem}; sent ${JSON.stringify(fuzzCase.body.subarray(0, 200).toString('utf8'))}; got ${response.text.slice(0, 300)}`);
      }
    });
    expect(failures, `FUZZ_SEED=${seed}, ${failures.length} failures:\n${failures.slice(0, 10).join('\n')}`).toEqual([]);

    // Still answering, nothing recorded, and the whole balance (one v4) still there.
    expect((await stack.call('GET', '/healthz')).status).toBe(200);
    expect((await stack.call('GET', '/readyz')).status).toBe(200);
    expect(await totalDocs(FUZZER)).toBe(0);
    expect((await stack.call('POST', '/v1/predictions/queue', { key: FUZZER, body: V4 })).status).toBe(200);
    expect((await stack.call('POST', '/v1/predictions/queue', { key: FUZZER, body: V4 })).status).toBe(402);
  });

  it('answers random ids and list queries with 200, 400 or 404, never 5xx', async () => {
    const fuzz = new Fuzz(7);
    const paths: string[] = [];
    for (let i = 0; i < 150; i++) {
      const variant = fuzz.int(0, 2);
      const id =
        variant === 0
          ? encodeURIComponent(fuzz.string(40).replace(/[\ud800-\udfff]/g, 'x'))
          : variant === 1
            ? Array.from(fuzz.bytes(fuzz.int(1, 20)), (byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')
            : 'a'.repeat(fuzz.int(90, 3000));
      paths.push(`/v1/predictions/${id}`);
    }
    for (let i = 0; i < 150; i++) {
      const value = () => fuzz.pick([String(fuzz.int(-5, 200)), encodeURIComponent(fuzz.string(10).replace(/[\ud800-\udfff]/g, 'x')), '1e3', '0x10', '', '%ff', '99999999999999999999999']);
      paths.push(`/v1/predictions?${fuzz.chance(0.8) ? `limit=${value()}` : ''}&${fuzz.chance(0.8) ? `offset=${value()}` : ''}`);
    }
    const failures: string[] = [];
    await inPool(paths, 6, async (path) => {
      const response = await rawCall(stack.baseUrl, 'GET', path, { 'x-api-key': FUZZER });
      const problem = response.status === 200 ? (response.body ? undefined : '200 without a JSON body') : rejectionProblem(response, [400, 404]);
      if (problem) failures.push(`GET ${path.slice(0, 120)}: ${problem}; got ${response.text.slice(0, 200)}`);
    });
    expect(failures, failures.slice(0, 10).join('\n')).toEqual([]);
    expect((await stack.call('GET', '/healthz')).status).toBe(200);
  });

  describe('in development mode (ALLOW_PRIVATE_URLS=true, as this stack runs)', () => {
    it('accepts an http webhook on loopback', async () => {
      const response = await stack.call('POST', '/v1/predictions/queue', { key: DEV, body: { ...V4, webhook: 'http://127.0.0.1:9/hook' } });
      expect(response.status).toBe(200);
      expect(response.body.data.input.webhook).toBe('http://127.0.0.1:9/hook');
    });

    it('still refuses a webhook that is not an http(s) URL', async () => {
      const response = await stack.call('POST', '/v1/predictions/queue', { key: DEV, body: { ...V4, webhook: 'ftp://127.0.0.1/hook' } });
      expect(response.status).toBe(400);
      expect(response.body.error.details).toContainEqual(expect.objectContaining({ field: 'webhook', rule: 'https_url' }));
    });
  });
});
