import { z } from 'zod';
import { WORKFLOWS } from '../workflows/names.ts';
import { requestSchemas } from '../workflows/validate.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.ts';

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });

const errorBody = {
  type: 'object',
  required: ['success', 'error'],
  properties: {
    success: { const: false },
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        details: {
          type: 'array',
          items: {
            type: 'object',
            required: ['field', 'rule'],
            properties: { field: { type: 'string' }, rule: { type: 'string' }, message: { type: 'string' } },
          },
        },
      },
    },
  },
};

const record = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    userId: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    startedAt: { type: ['string', 'null'], format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    completedAt: { type: ['string', 'null'], format: 'date-time' },
    status: { enum: ['queued', 'executing', 'executed', 'failed'] },
    input: { type: 'object', description: 'the normalized request, defaults filled in and seed resolved' },
    output: {
      description:
        '"" while queued or executing; {"images":[url,…]} when executed (outpainting without a prompt adds "caption", the text used as the prompt); "NSFW contents detected!" when rejected for NSFW',
      oneOf: [
        { type: 'string' },
        { type: 'object', properties: { images: { type: 'array', items: { type: 'string', format: 'uri' } }, caption: { type: 'string' } }, required: ['images'] },
      ],
    },
    error: {
      oneOf: [{ type: 'null' }, { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } }],
    },
    refunded: { type: 'boolean' },
    creditType: { const: 'API_CREDITS' },
    isScanables: { type: 'array', items: { type: 'boolean' } },
    credits: { type: 'number' },
  },
};

const errors = (...codes: number[]) =>
  Object.fromEntries(
    codes.map((code) => [
      String(code),
      {
        description: code === 503 ? 'the database or NATS is temporarily unavailable; nothing was changed; retry after Retry-After' : 'error',
        ...(code === 503 ? { headers: { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } } } : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retried create safe: the same key with the same body returns the prediction it made (charged once, header Idempotent-Replayed: true); with another body, 422 idempotency_key_reused. Per user, kept IDEMPOTENCY_KEY_TTL_HOURS (default 24).',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};
const createdHeaders = { 'Idempotent-Replayed': { description: '"true" when this is the prediction an earlier create with the same Idempotency-Key made', schema: { type: 'string' } } };

/** OpenAPI 3.1, generated from the same zod schemas that validate requests. */
export function buildOpenApiDocument(): Record<string, unknown> {
  const requestComponents = Object.fromEntries(WORKFLOWS.map((name) => [componentName(name), jsonSchema(requestSchemas[name])]));
  const envelope = { type: 'object', properties: { success: { const: true }, data: { $ref: '#/components/schemas/Prediction' } } };
  return {
    openapi: '3.1.0',
    info: { title: 'qr-art prediction API', version: '1', description: 'Artistic scannable QR codes and outpainting. See docs/api.md.' },
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      schemas: { Error: errorBody, Prediction: record, ...requestComponents },
    },
    security: [{ apiKey: [] }],
    paths: {
      '/v1/predictions/queue': {
        post: {
          summary: 'Create a prediction (any workflow)',
          parameters: [idempotencyKey],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { oneOf: WORKFLOWS.map((name) => ({ $ref: `#/components/schemas/${componentName(name)}` })) } } },
          },
          responses: { '200': { description: 'queued', headers: createdHeaders, content: { 'application/json': { schema: envelope } } }, ...errors(400, 401, 402, 413, 415, 422, 503) },
        },
        get: {
          summary: 'Create an outpainting prediction (spec 4.3 names GET; body as for POST)',
          parameters: [idempotencyKey],
          requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${componentName('outpainting')}` } } } },
          responses: { '200': { description: 'queued', headers: createdHeaders, content: { 'application/json': { schema: envelope } } }, ...errors(400, 401, 402, 405, 413, 415, 422, 503) },
        },
      },
      '/v1/predictions/{predictionId}': {
        get: {
          summary: 'Get a prediction',
          parameters: [{ name: 'predictionId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': { description: 'the prediction', content: { 'application/json': { schema: envelope } } }, ...errors(401, 404, 503) },
        },
      },
      '/v1/predictions': {
        get: {
          summary: 'List predictions, newest first',
          parameters: [
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
          ],
          responses: { '200': { description: 'a page of predictions' }, ...errors(400, 401, 503) },
        },
      },
      '/v1/files/{name}': {
        get: { summary: 'An output image (no key needed; the name is unguessable)', security: [], responses: { '200': { description: 'image' }, ...errors(404, 503) } },
      },
      '/healthz': { get: { summary: 'Process is up', security: [], responses: { '200': { description: 'ok' } } } },
      '/readyz': { get: { summary: 'Database, NATS (and the local worker) are ready', security: [], responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } } } },
    },
  };
}

function componentName(workflow: string): string {
  return `Create_${workflow.replace(/[^A-Za-z0-9]/g, '_')}`;
}
