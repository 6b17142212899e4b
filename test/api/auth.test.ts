import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAccounts, revokeApiKey } from '../../src/store/accounts.ts';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import { rawCall, repeatedHeaderGet } from '../helpers/raw-http.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

const ALICE = 'key-alice-auth-0123456789abcdef';
const BOB = 'key-bob-auth-0123456789abcdef00';
// Never used before it is revoked, so no cached principal can outlive the revocation.
const CAROL = 'key-carol-auth-0123456789abcdef';

const V4 = { workflow: 'generate_qr_art_v4', qrText: 'a lighthouse at dusk', qrContent: 'https://example.com' };
const OUTPAINTING = {
  workflow: 'outpainting',
  image: 'https://example.com/photo.jpg',
  image_width: 512,
  image_height: 512,
  padding_left: 64,
  padding_right: 64,
  padding_top: 0,
  padding_bottom: 0,
  type: 'one_shot',
};


const unauthorizedBody = {
  success: false,
  error: { code: 'unauthorized', message: expect.any(String), details: [{ field: 'x-api-key', rule: expect.any(String) }] },
};

describe('authentication and ownership', () => {
  let stack: TestStack;
  let aliceId: string;

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `alice:${ALICE}:100,bob:${BOB}:100,carol:${CAROL}:100` } });
    const created = await stack.call('POST', '/v1/predictions/queue', { key: ALICE, body: V4 });
    expect(created.status).toBe(200);
    aliceId = created.body.data.id;
  });
  afterAll(async () => stack?.stop());

  /** Every authenticated endpoint, called with the given x-api-key header (undefined: no header). */
  const endpoints: { name: string; call: (key: string | undefined) => Promise<{ status: number; body: any }> }[] = [
    {
      name: 'POST /v1/predictions/queue',
      call: (key) => rawCall(stack.baseUrl, 'POST', '/v1/predictions/queue', { headers: withKey(key, { 'content-type': 'application/json' }), body: JSON.stringify(V4) }),
    },
    {
      name: 'GET /v1/predictions/queue (outpainting body)',
      call: (key) => rawCall(stack.baseUrl, 'GET', '/v1/predictions/queue', { headers: withKey(key, { 'content-type': 'application/json' }), body: JSON.stringify(OUTPAINTING) }),
    },
    { name: 'GET /v1/predictions/:id (existing id)', call: (key) => rawCall(stack.baseUrl, 'GET', `/v1/predictions/${aliceId}`, { headers: withKey(key) }) },
    { name: 'GET /v1/predictions/:id (unknown id)', call: (key) => rawCall(stack.baseUrl, 'GET', `/v1/predictions/${randomUUID()}`, { headers: withKey(key) }) },
    { name: 'GET /v1/predictions', call: (key) => rawCall(stack.baseUrl, 'GET', '/v1/predictions', { headers: withKey(key) }) },
    { name: 'GET /v1/predictions?limit=5&offset=0', call: (key) => rawCall(stack.baseUrl, 'GET', '/v1/predictions?limit=5&offset=0', { headers: withKey(key) }) },
  ];

  function withKey(key: string | undefined, headers: Record<string, string> = {}): Record<string, string> {
    return key === undefined ? headers : { ...headers, 'x-api-key': key };
  }

  const badKeys: { name: string; key: () => string | undefined }[] = [
    { name: 'no x-api-key header', key: () => undefined },
    { name: 'an empty x-api-key', key: () => '' },
    { name: 'an unknown key', key: () => 'key-nobody-0123456789abcdef0123' },
    { name: "alice's key in upper case", key: () => ALICE.toUpperCase() },
    { name: "alice's key with one more character", key: () => `${ALICE}x` },
    { name: "alice's key without its last character", key: () => ALICE.slice(0, -1) },
  ];

  describe.each(endpoints)('$name', (endpoint) => {
    it.each(badKeys)('answers 401 with the documented error body for $name', async ({ key }) => {
      const response = await endpoint.call(key());
      expect(response.status).toBe(401);
      expect(response.body).toEqual(unauthorizedBody);
    });
  });

  it('answers 401 naming the rule when x-api-key is sent twice, even twice the same valid key', async () => {
    for (const second of [ALICE, BOB]) {
      const response = await repeatedHeaderGet(stack.baseUrl, '/v1/predictions', 'x-api-key', [ALICE, second]);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({
        success: false,
        error: { code: 'unauthorized', message: 'send the x-api-key header once', details: [{ field: 'x-api-key', rule: 'repeated', message: 'send the x-api-key header once' }] },
      });
    }
  });

  it('answers 401 to every endpoint for a revoked key', async () => {
    const carolKey = (await listAccounts(stack.api.db)).find((user) => user.userId === 'carol')!.keys[0]!.keyId;
    await revokeApiKey(stack.api.db, carolKey);
    for (const endpoint of endpoints) {
      const response = await endpoint.call(CAROL);
      expect(response.status, endpoint.name).toBe(401);
      expect(response.body, endpoint.name).toEqual(unauthorizedBody);
    }
  });

  it('charges nothing and records nothing for an unauthenticated create', async () => {
    await rawCall(stack.baseUrl, 'POST', '/v1/predictions/queue', { headers: { 'content-type': 'application/json' }, body: JSON.stringify(V4) });
    const listed = await stack.call('GET', '/v1/predictions', { key: ALICE });
    expect(listed.status).toBe(200);
    expect(listed.body.data.totalDocs).toBe(1);
    expect(listed.body.data.docs.map((doc: { id: string }) => doc.id)).toEqual([aliceId]);
  });

  it('accepts the valid key on every endpoint', async () => {
    for (const endpoint of endpoints) {
      const response = await endpoint.call(ALICE);
      expect([200, 404], endpoint.name).toContain(response.status);
      if (endpoint.name.includes('unknown id')) expect(response.status).toBe(404);
      else expect(response.status, endpoint.name).toBe(200);
    }
  });

  describe("another user's prediction", () => {
    it('answers 404 with exactly the body of an unknown id', async () => {
      const foreign = await stack.call('GET', `/v1/predictions/${aliceId}`, { key: BOB });
      const unknown = await stack.call('GET', `/v1/predictions/${randomUUID()}`, { key: BOB });
      expect(foreign.status).toBe(404);
      expect(unknown.status).toBe(404);
      expect(foreign.body).toEqual(unknown.body);
      expect(foreign.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String), details: [] } });
      expect(JSON.stringify(foreign.body)).not.toContain(aliceId);
      expect(foreign.headers.get('content-type')).toBe(unknown.headers.get('content-type'));
    });

    it('stays readable by its owner', async () => {
      const own = await stack.call('GET', `/v1/predictions/${aliceId}`, { key: ALICE });
      expect(own.status).toBe(200);
      expect(own.body.success).toBe(true);
      expect(own.body.data).toMatchObject({ id: aliceId, userId: 'alice', status: 'queued' });
    });

    it('is not listed for the other user', async () => {
      const listed = await stack.call('GET', '/v1/predictions', { key: BOB });
      expect(listed.status).toBe(200);
      expect(listed.body.data.docs.map((doc: { id: string }) => doc.id)).not.toContain(aliceId);
      expect(listed.body.data.docs.every((doc: { userId: string }) => doc.userId === 'bob')).toBe(true);
    });
  });

  describe('ids that cannot exist', () => {
    it.each([
      ['a NUL character', '/v1/predictions/%00'],
      ['a NUL inside an id', `/v1/predictions/${randomUUID()}%00`],
      ['5000 characters', `/v1/predictions/${'a'.repeat(5000)}`],
      ['an encoded slash', `/v1/predictions/..%2F..%2Fetc%2Fpasswd`],
      ['quotes and SQL', `/v1/predictions/${encodeURIComponent("' OR '1'='1")}`],
    ])('answer 404 with the documented error body for %s', async (_name, path) => {
      const response = await stack.call('GET', path, { key: ALICE });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String), details: [] } });
    });

    it('answer 400 with the documented error body for a malformed percent-encoding', async () => {
      const response = await stack.call('GET', '/v1/predictions/%E0%A4%A', { key: ALICE });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ success: false, error: { code: expect.any(String), message: expect.any(String) } });
      expect(response.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.any(String), rule: expect.any(String) })]));
      // Answered by the router, before any hook: it still carries the request id.
      expect(response.headers.get('x-request-id')).toBeTruthy();
    });
  });

  describe('endpoints that need no key', () => {
    it('GET /healthz answers 200', async () => {
      const response = await stack.call('GET', '/healthz');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ status: 'ok' });
      // A bad key does not matter there.
      expect((await stack.call('GET', '/healthz', { key: 'key-nobody-0123456789abcdef0123' })).status).toBe(200);
    });

    it('GET /readyz answers 200 and reports the database and NATS', async () => {
      const response = await stack.call('GET', '/readyz');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ status: 'ready', checks: {}, dependencies: { database: true, nats: true } });
    });

    it('GET /openapi.json is an OpenAPI 3.1 document with a request schema per workflow', async () => {
      const response = await stack.call('GET', '/openapi.json');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const doc = response.body;
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
      expect(typeof doc.info.title).toBe('string');
      expect(typeof doc.info.version).toBe('string');
      expect(doc.paths['/v1/predictions/queue'].post).toBeDefined();
      expect(doc.paths['/v1/predictions/queue'].get).toBeDefined();
      expect(doc.paths['/v1/predictions/{predictionId}'].get).toBeDefined();
      expect(doc.paths['/v1/predictions'].get).toBeDefined();
      const schemes = Object.values(doc.components.securitySchemes) as { type: string; in: string; name: string }[];
      expect(schemes).toContainEqual({ type: 'apiKey', in: 'header', name: 'x-api-key' });

      const schemas = doc.components.schemas as Record<string, { type?: string; properties?: Record<string, { const?: string }>; required?: string[] }>;
      const byWorkflow = new Map<string, string>();
      for (const [name, schema] of Object.entries(schemas)) {
        const literal = schema.properties?.workflow?.const;
        if (typeof literal === 'string') byWorkflow.set(literal, name);
      }
      expect([...byWorkflow.keys()].sort()).toEqual([...WORKFLOWS].sort());
      for (const workflow of WORKFLOWS) {
        const schema = schemas[byWorkflow.get(workflow)!]!;
        expect(schema.type, workflow).toBe('object');
        expect(schema.required, workflow).toContain('workflow');
      }
      // The create body refers to every one of them, and every $ref resolves.
      const oneOf = doc.paths['/v1/predictions/queue'].post.requestBody.content['application/json'].schema.oneOf as { $ref: string }[];
      expect(oneOf.map((entry) => entry.$ref.replace('#/components/schemas/', '')).sort()).toEqual([...byWorkflow.values()].sort());
      const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
      for (const ref of refs) {
        const name = ref.slice('"$ref":"#/components/schemas/'.length, -1);
        expect(schemas[name], ref).toBeDefined();
      }
    });

    it('GET /docs is an HTML page naming every workflow', async () => {
      const response = await fetch(`${stack.baseUrl}/docs`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await response.text();
      expect(html.toLowerCase()).toContain('<html');
      for (const workflow of WORKFLOWS) expect(html).toContain(workflow);
    });

    it.each(['/playground', '/playground/'])('GET %s is sent to the page at /', async (folder) => {
      const response = await fetch(`${stack.baseUrl}${folder}`, { redirect: 'manual' });
      expect(response.status).toBe(301);
      expect(response.headers.get('location')).toBe('/');
    });

    it('GET /docs/ is sent to /docs', async () => {
      const response = await fetch(`${stack.baseUrl}/docs/`, { redirect: 'manual' });
      expect(response.status).toBe(301);
      expect(response.headers.get('location')).toBe('/docs');
    });
  });

  describe('unknown routes', () => {
    it.each([
      ['GET', '/nope'],
      ['GET', '/v1/nope'],
      ['GET', '/v2/predictions'],
      ['DELETE', '/v2/predictions'],
      ['GET', '/playground/no-such-file.js'],
      ['GET', '/playground//'],
    ])('%s %s answers 404 with a JSON error body', async (method, path) => {
      const response = await stack.call(method, path, { key: ALICE });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('allow')).toBeNull();
      expect(response.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String), details: [] } });
    });

    // @fastify/send's refusals are a client's request for a file that is not there, or a
    // condition or range that does not hold: never a 500 (a 5xx is a fault of ours, and counted so).
    it.each([
      ['a path climbing out of the assets', '/docs/assets/../package.json', {}, 404, undefined],
      ['a path climbing out of the playground', '/playground/../index.ts', {}, 404, undefined],
      ['a NUL byte', '/docs/assets/swagger-ui.css%00', {}, 404, undefined],
      ['a 5000-character name', `/docs/assets/${'a'.repeat(5000)}`, {}, 404, undefined],
      ['an If-Match no asset meets', '/docs/assets/swagger-ui.css', { 'if-match': '"nope"' }, 412, 'if-match'],
      ['an If-Match the page does not meet', '/', { 'if-match': '"nope"' }, 412, 'if-match'],
      ['an If-Unmodified-Since before the file', '/playground/styles.css', { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' }, 412, 'if-unmodified-since'],
      ['a Range past the end of a playground file', '/playground/styles.css', { range: 'bytes=999999999-' }, 416, 'range'],
      ['a Range past the end of an asset', '/docs/assets/swagger-ui.css', { range: 'bytes=999999999-' }, 416, 'range'],
    ] as const)('a static file asked with %s answers a %i JSON error, not a 500', async (_what, path, headers, status, field) => {
      const response = await rawCall(stack.baseUrl, 'GET', path, { headers });
      expect(response.status).toBe(status);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toMatchObject({ success: false, error: { code: { 404: 'not_found', 412: 'precondition_failed', 416: 'range_not_satisfiable' }[status] } });
      if (field) expect(response.body.error.details).toEqual([{ field, rule: expect.any(String), message: expect.any(String) }]);
      if (status === 416) expect(response.headers['content-range']).toMatch(/^bytes \*\/\d+$/);
    });

    it.each([
      ['POST', '/v1/predictions', 'GET, HEAD'],
      ['DELETE', `/v1/predictions/${randomUUID()}`, 'GET, HEAD'],
      ['PATCH', `/v1/predictions/${randomUUID()}?x=1`, 'GET, HEAD'],
      ['PUT', '/v1/predictions/queue', 'GET, POST'],
      ['POST', '/healthz', 'GET, HEAD'],
      ['OPTIONS', '/v1/predictions', 'GET, HEAD'],
      ['POST', '/playground/main.js', 'GET, HEAD'],
      ['GET', '/v1/qr/preview', 'POST'],
      ['GET', '/v1/predictions/quote', 'POST'],
      ['DELETE', '/v1/predictions/quote', 'POST'],
    ])('%s %s, a known path with another method, answers 405 with Allow: %s', async (method, path, allow) => {
      const response = await stack.call(method, path, { key: ALICE });
      expect(response.status).toBe(405);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('allow')).toBe(allow);
      expect(response.body).toEqual({
        success: false,
        error: { code: 'method_not_allowed', message: expect.stringContaining(`not ${method}`), details: [{ field: 'method', rule: 'allowed_methods', message: `use ${allow}` }] },
      });
    });

    it('GET and HEAD of the keyless quote are its 405 without a key too, not a 401 and a 404 for a prediction "quote"', async () => {
      for (const method of ['GET', 'HEAD']) {
        const response = await rawCall(stack.baseUrl, method, '/v1/predictions/quote', {});
        expect(response.status, method).toBe(405);
        expect(response.headers.allow).toBe('POST');
      }
    });
  });
});
