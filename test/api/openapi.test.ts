/**
 * The OpenAPI document (/openapi.json, rendered at /docs) against OpenAPI 3.1's rules and
 * against the service itself: every example goes through the real request validator.
 *
 * No OpenAPI validator package is installed, so the 3.1 structure is checked here, and the
 * schemas and examples with ajv's JSON Schema 2020-12 validator (the dialect OpenAPI 3.1
 * schemas use); ajv is a dev dependency of ours (fastify validates with it too).
 */
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api/openapi.ts';
import { CREATE_EXAMPLES } from '../../src/api/openapi-examples.ts';
import { catalogue } from '../../src/workflows/catalogue.ts';
import { WORKFLOWS, type WorkflowName } from '../../src/workflows/names.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { DOC_ID, rewriteRefs, schemaValidator } from '../helpers/openapi-schemas.ts';

type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const doc = buildOpenApiDocument() as Json;

/** Every operation of the document, paths and webhooks, with where it is. */
function operations(): { where: string; path: string; op: Json; pathItem: Json }[] {
  const found: { where: string; path: string; op: Json; pathItem: Json }[] = [];
  for (const [group, items] of [['paths', doc.paths], ['webhooks', doc.webhooks ?? {}]] as const) {
    for (const [path, pathItem] of Object.entries(items as Record<string, Json>)) {
      for (const method of METHODS) if (pathItem[method]) found.push({ where: `${group} ${method.toUpperCase()} ${path}`, path, op: pathItem[method], pathItem });
    }
  }
  return found;
}

/** Every media type object (request bodies and responses) with the schema and examples it carries. */
function mediaTypes(): { where: string; media: Json }[] {
  const found: { where: string; media: Json }[] = [];
  for (const { where, op } of operations()) {
    for (const [type, media] of Object.entries<Json>(op.requestBody?.content ?? {})) found.push({ where: `${where} request ${type}`, media });
    for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
      for (const [type, media] of Object.entries<Json>(response.content ?? {})) found.push({ where: `${where} ${status} ${type}`, media });
    }
  }
  return found;
}

function examplesOf(media: Json): { name: string; value: unknown }[] {
  const named = Object.entries<Json>(media.examples ?? {}).map(([name, example]) => ({ name, value: example.value }));
  return media.example === undefined ? named : [{ name: 'example', value: media.example }, ...named];
}

/** Resolves a local JSON pointer ("#/components/schemas/Error") in the document. */
function resolvePointer(ref: string): unknown {
  expect(ref.startsWith('#/'), ref).toBe(true);
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = node !== null && typeof node === 'object' ? (node as Json)[key] : undefined;
  }
  return node;
}

function allRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((item) => allRefs(item, out));
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else allRefs(value, out);
    }
  }
  return out;
}

const createOperation = () => doc.paths['/v1/predictions/queue'].post;

describe('the OpenAPI document', () => {
  let ajv: Ajv2020;
  beforeAll(() => {
    ajv = schemaValidator(doc);
  });

  it('has the top-level shape OpenAPI 3.1 requires, with a relative server for try-it', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(typeof doc.info.title).toBe('string');
    expect(typeof doc.info.version).toBe('string');
    // Relative to the page's origin: Swagger UI's Try it out calls the server that served /docs.
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    for (const path of Object.keys(doc.paths)) expect(path, path).toMatch(/^\//);
    const allowedTop = new Set(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'externalDocs']);
    for (const key of Object.keys(doc)) expect(allowedTop.has(key) || key.startsWith('x-'), key).toBe(true);
  });

  it('gives every operation responses, a unique operationId, declared tags and declared security schemes', () => {
    const ids = new Set<string>();
    const tags = new Set((doc.tags as { name: string }[]).map((tag) => tag.name));
    const schemes = new Set(Object.keys(doc.components.securitySchemes));
    for (const { where, op } of operations()) {
      expect(Object.keys(op.responses ?? {}).length, where).toBeGreaterThan(0);
      for (const status of Object.keys(op.responses)) expect(status, where).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
      if (!where.startsWith('webhooks')) {
        expect(typeof op.operationId, where).toBe('string');
        expect(ids.has(op.operationId), `${where}: duplicate ${op.operationId}`).toBe(false);
        ids.add(op.operationId);
      }
      for (const tag of op.tags ?? []) expect(tags.has(tag), `${where}: tag ${tag}`).toBe(true);
      for (const requirement of op.security ?? doc.security) for (const name of Object.keys(requirement)) expect(schemes.has(name), `${where}: ${name}`).toBe(true);
    }
  });

  it('declares each path template parameter as a required path parameter, and no others', () => {
    for (const { where, path, op, pathItem } of operations()) {
      if (where.startsWith('webhooks')) continue;
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
      const params = [...(pathItem.parameters ?? []), ...(op.parameters ?? [])] as Json[];
      const inPath = params.filter((p) => p.in === 'path');
      expect(inPath.map((p) => p.name).sort(), where).toEqual(templated);
      for (const p of inPath) expect(p.required, `${where} ${p.name}`).toBe(true);
      for (const p of params) expect(['query', 'header', 'path', 'cookie'], `${where} ${p.name}`).toContain(p.in);
    }
  });

  it('has no $ref that points at nothing', () => {
    const refs = allRefs(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(resolvePointer(ref), ref).toBeDefined();
  });

  it('holds only valid JSON Schema 2020-12 schemas (strict: no unknown keywords)', () => {
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`${DOC_ID}#/$defs/${name}`), name).not.toThrow();
    }
    for (const { where, media } of mediaTypes()) {
      if (media.schema) expect(() => ajv.compile(rewriteRefs(media.schema)), where).not.toThrow();
    }
  });

  it('has examples that match the schema they illustrate, everywhere', () => {
    let checked = 0;
    for (const { where, media } of mediaTypes()) {
      if (!media.schema) continue;
      const validate = ajv.compile(rewriteRefs(media.schema));
      for (const { name, value } of examplesOf(media)) {
        const ok = validate(value);
        expect(ok, `${where} example ${name}: ${ajv.errorsText(validate.errors)}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(WORKFLOWS.length * 2);
  });
});

describe('request examples', () => {
  const requestExamples = (op: Json) => op.requestBody.content['application/json'].examples as Record<string, { value: Json }>;

  it('offer a create body for every workflow, named after it', () => {
    expect(Object.keys(requestExamples(createOperation())).sort()).toEqual([...WORKFLOWS].sort());
    for (const workflow of WORKFLOWS) expect(requestExamples(createOperation())[workflow]!.value.workflow).toBe(workflow);
  });

  it.each(WORKFLOWS)('the %s example passes the real validator, every field kept as sent', (workflow: WorkflowName) => {
    const body = CREATE_EXAMPLES[workflow];
    // Production rules: https webhooks on public hosts only.
    const parsed = parseCreateBody(body, { allowPrivateUrls: false });
    expect(parsed.ok ? [] : parsed.issues).toEqual([]);
    if (!parsed.ok) return;
    // parseCreateBody drops unknown fields silently: a misspelt example field would show here.
    for (const [field, value] of Object.entries(body)) expect(parsed.value.input[field], field).toEqual(value);
  });

  it('of the quote are create bodies, and of the preview are layouts the validator accepts, for every workflow whose code the service draws', () => {
    const quote = requestExamples(doc.paths['/v1/predictions/quote'].post);
    expect(Object.keys(quote).sort()).toEqual([...WORKFLOWS].sort());
    const preview = requestExamples(doc.paths['/v1/qr/preview'].post);
    expect(Object.keys(preview).length).toBeGreaterThan(0);
    for (const [workflow, { value }] of Object.entries(preview)) {
      // The preview fills in the prompt a create requires (only the layout is drawn).
      const parsed = parseCreateBody({ prompt: 'preview', qrText: 'preview', ...value }, { allowPrivateUrls: false });
      expect(parsed.ok ? [] : parsed.issues, workflow).toEqual([]);
      expect(['qr-content', 'qr-v5'], workflow).toContain(catalogue[workflow as WorkflowName].family);
    }
    // Every v4- and v5-family workflow can be previewed.
    const drawn = WORKFLOWS.filter((name) => ['qr-content', 'qr-v5'].includes(catalogue[name].family));
    expect(Object.keys(preview).sort()).toEqual([...drawn].sort());
  });

  it("show the quote's answer as the validator normalizes the body, priced as create would charge", () => {
    const example = doc.paths['/v1/predictions/quote'].post.responses['200'].content['application/json'].example;
    const parsed = parseCreateBody(CREATE_EXAMPLES[example.data.workflow as WorkflowName], { allowPrivateUrls: false });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(example.data.credits).toBe(parsed.value.costCents / 100);
    expect(example.data.input).toEqual(parsed.value.input);
  });
});

describe('error examples', () => {
  const errorExamples = (op: Json, status: number) => Object.values<Json>(op.responses[String(status)].content['application/json'].examples).map((e) => e.value);

  it('show a 400 whose details name the fields at fault, exactly as the validator reports them', () => {
    const [invalid] = errorExamples(createOperation(), 400);
    expect(invalid.success).toBe(false);
    expect(invalid.error.code).toBe('invalid_request');
    expect(invalid.error.details.length).toBeGreaterThan(0);
    for (const detail of invalid.error.details) expect(detail.field).not.toBe('');
    // The same body sent to the validator gives the same details.
    const sent = { ...CREATE_EXAMPLES.generate_qr_art_v4s, ...Object.fromEntries(invalid.error.details.map((d: Json) => [d.field, 999])) };
    const parsed = parseCreateBody(sent, { allowPrivateUrls: false });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.issues.map((i) => i.field).sort()).toEqual(invalid.error.details.map((d: Json) => d.field).sort());
  });

  it.each([
    ['/v1/predictions/queue', 'post', 401, 'unauthorized'],
    ['/v1/predictions/queue', 'post', 402, 'insufficient_credits'],
    ['/v1/predictions/queue', 'post', 503, 'service_unavailable'],
    ['/v1/qr/preview', 'post', 429, 'rate_limited'],
    ['/v1/predictions/quote', 'post', 429, 'rate_limited'],
    ['/v1/predictions/{predictionId}', 'get', 404, 'not_found'],
  ])('%s %s documents %i with code %s in the error body', (path, method, status, code) => {
    const op = doc.paths[path][method];
    const [example] = errorExamples(op, status);
    expect(example).toMatchObject({ success: false, error: { code, details: expect.any(Array) } });
    expect(typeof example.error.message).toBe('string');
    if (status === 429 || status === 503) expect(op.responses[String(status)].headers['Retry-After'], `${status} Retry-After`).toBeDefined();
  });
});

describe('the issue-15 endpoints, as the contract has them', () => {
  it('POST /v1/qr/preview: no key, a PNG with x-qr-layout and x-credits, 400 workflow_has_preview, 429', () => {
    const op = doc.paths['/v1/qr/preview'].post;
    expect(op.security).toEqual([]);
    const ok = op.responses['200'];
    expect(Object.keys(ok.content)).toEqual(['image/png']);
    expect(Object.keys(ok.headers).sort()).toEqual(['x-credits', 'x-qr-layout']);
    expect(resolvePointer(ok.headers['x-qr-layout'].schema.contentSchema.$ref)).toMatchObject({ required: ['width', 'height', 'x', 'y', 'side', 'codeSide', 'version'] });
    const rules = Object.values<Json>(op.responses['400'].content['application/json'].examples).flatMap((e) => e.value.error.details.map((d: Json) => d.rule));
    expect(rules).toContain('workflow_has_preview');
    expect(op.responses['429']).toBeDefined();
  });

  it('POST /v1/predictions/quote: no key, answers {success, data: {workflow, credits, input}}, 400 and 429', () => {
    const op = doc.paths['/v1/predictions/quote'].post;
    expect(op.security).toEqual([]);
    expect(resolvePointer(op.responses['200'].content['application/json'].schema.$ref)).toMatchObject({ properties: { data: { required: ['workflow', 'credits', 'input'] } } });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '429']));
  });

  it('GET /v1/predictions/{predictionId}/events: the key, an event stream whose event types are described, 401/404/503', () => {
    const op = doc.paths['/v1/predictions/{predictionId}/events'].get;
    expect(op.security).toBeUndefined(); // the document's default: x-api-key
    const stream = op.responses['200'].content['text/event-stream'];
    expect(stream).toBeDefined();
    for (const event of ['`prediction`', '`progress`', 'keep-alive']) expect(op.description).toContain(event);
    expect(stream.example).toMatch(/^event: prediction\ndata: \{/);
    expect(stream.example).toContain('event: progress\ndata: {"step":');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '401', '404', '503']));
  });

  it('describes the webhook POST with its Standard Webhooks signature headers', () => {
    const hook = doc.webhooks.predictionChanged.post;
    expect((hook.parameters as Json[]).map((p) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    expect(hook.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/PredictionEnvelope');
  });
});
