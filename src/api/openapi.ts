/**
 * The OpenAPI 3.1 document served at /openapi.json and rendered by Swagger UI at /docs.
 *
 * Request schemas are generated from the same zod schemas that validate requests (the response
 * bodies' schemas are in openapi-schemas.ts), and the examples (openapi-examples.ts) are run
 * through the real validator (parseCreateBody) and the real error builders, so what /docs shows
 * is what the service does: test/api/openapi.test.ts checks every example against both the
 * document's schemas and the validator.
 */
import { z } from 'zod';
import { WORKFLOWS, type WorkflowName } from '../workflows/names.ts';
import { centsToCredits } from '../workflows/pricing.ts';
import { requestSchemas } from '../workflows/validate.ts';
import {
  CREATE_EXAMPLES,
  EXAMPLE_ID,
  errorExamples,
  listExample,
  parsedExample,
  PREVIEW_WORKFLOWS,
  predictionExample,
  previewExample,
  streamLimited,
  type ErrorExample,
} from './openapi-examples.ts';
import { DEFAULT_EVENT_STREAMS_PER_KEY, invalidRequest } from './errors.ts';
import { RESPONSE_SCHEMAS } from './openapi-schemas.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.ts';

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });

// ---------------------------------------------------------------------------
// Responses and parameters
// ---------------------------------------------------------------------------

const retryAfter = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } };

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'the request is invalid; `details` names every field at fault',
  401: 'missing, unknown or revoked `x-api-key`',
  402: 'the balance does not cover the cost; nothing was charged or created',
  404: 'not found (also for a prediction of another user)',
  405: 'GET /v1/predictions/queue with a workflow other than outpainting',
  413: 'body over BODY_LIMIT_BYTES',
  415: 'the body is not application/json',
  422: 'the Idempotency-Key was used before with a different body',
  429: 'too many requests from this address (PREVIEW_RATE_LIMIT a minute); retry after Retry-After',
  503: 'the database or NATS is temporarily unavailable; nothing was changed (except with details[0].rule create_outcome_unknown: a create whose commit the database never confirmed, which may have been made); retry after Retry-After',
};

/** Error responses with their example bodies; `extra400` adds examples to the 400 (an endpoint's own rules). */
function errors(codes: number[], extra400: Record<string, ErrorExample> = {}) {
  const examples = errorExamples();
  return Object.fromEntries(
    codes.map((code) => [
      String(code),
      {
        description: ERROR_DESCRIPTIONS[code] ?? 'error',
        ...(code === 503 || code === 429 ? { headers: retryAfter } : {}),
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/Error' },
            examples: code === 400 ? { ...examples[400], ...extra400 } : examples[code],
          },
        },
      },
    ]),
  );
}

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retried create safe: the same key with the same body returns the prediction it made (charged once, header Idempotent-Replayed: true); with another body, 422 idempotency_key_reused. Per user, kept IDEMPOTENCY_KEY_TTL_HOURS (default 24).',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};
const createdHeaders = { 'Idempotent-Replayed': { description: '"true" when this is the prediction an earlier create with the same Idempotency-Key made', schema: { type: 'string' } } };
const predictionId = { name: 'predictionId', in: 'path', required: true, description: 'the `id` a create returned', schema: { type: 'string' }, example: EXAMPLE_ID };

/** `examples` of a request body: one per workflow, named after it. */
function bodyExamples(workflows: readonly WorkflowName[]) {
  return Object.fromEntries(workflows.map((name) => [name, { summary: name, value: CREATE_EXAMPLES[name] }]));
}

const createBodySchema = (workflows: readonly WorkflowName[]) => ({ oneOf: workflows.map((name) => ({ $ref: `#/components/schemas/${componentName(name)}` })) });

const SSE_EXAMPLE = [
  'event: prediction',
  `data: ${JSON.stringify({ ...predictionExample('generate_qr_art_v4s', 'queued'), status: 'executing', startedAt: '2025-06-01T12:00:01.250Z', updatedAt: '2025-06-01T12:00:01.250Z' })}`,
  '',
  'event: progress',
  'data: {"step":5,"total":20}',
  '',
  ': keep-alive',
  '',
  'event: progress',
  'data: {"step":20,"total":20}',
  '',
  'event: prediction',
  `data: ${JSON.stringify(predictionExample('generate_qr_art_v4s', 'executed'))}`,
  '',
  '',
].join('\n');

const DESCRIPTION = `Artistic scannable QR codes and outpainting, as asynchronous predictions: create one, then poll it,
follow its events, or receive a webhook. The full contract, every error code and the limits are in docs/api.md.

**Authentication.** Every \`/v1/predictions\` call needs the header \`x-api-key\`. Press **Authorize**, paste your key,
and the **Try it out** requests from this page send it (it is kept in this browser's local storage until you log out there).

**Errors.** Every rejected request gets \`{"success": false, "error": {"code", "message", "details": [{"field", "rule", "message"}]}}\`.

**Free endpoints.** \`POST /v1/qr/preview\` and \`POST /v1/predictions/quote\` need no key and charge nothing; they are rate-limited per client address.`;

/** OpenAPI 3.1, generated from the same zod schemas that validate requests. */
export function buildOpenApiDocument(): Record<string, unknown> {
  const requestComponents = Object.fromEntries(WORKFLOWS.map((name) => [componentName(name), jsonSchema(requestSchemas[name])]));
  const v5 = parsedExample('generate_qr_art_v5');
  return {
    openapi: '3.1.0',
    info: { title: 'qr-art prediction API', version: '1', description: DESCRIPTION, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
    // Relative: "Try it out" on /docs then calls the origin that served the page, whatever host or port it runs on.
    servers: [{ url: '/', description: 'this server' }],
    tags: [
      { name: 'predictions', description: 'create, read and follow predictions (key needed)' },
      { name: 'free', description: 'preview and price a request before paying for it (no key; rate-limited)' },
      { name: 'files', description: 'output images' },
      { name: 'health', description: 'probes for load balancers and orchestrators' },
    ],
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      schemas: { ...RESPONSE_SCHEMAS, ...requestComponents },
    },
    security: [{ apiKey: [] }],
    paths: {
      '/v1/predictions/queue': {
        post: {
          tags: ['predictions'],
          operationId: 'createPrediction',
          summary: 'Create a prediction (any workflow)',
          description: 'Charges the cost at once and answers with the record in status `queued`. Field rules and prices per workflow: docs/workflows.md.',
          parameters: [idempotencyKey],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: createBodySchema(WORKFLOWS), examples: bodyExamples(WORKFLOWS) } },
          },
          responses: {
            '200': {
              description: 'queued',
              headers: createdHeaders,
              content: { 'application/json': { schema: { $ref: '#/components/schemas/PredictionEnvelope' }, example: { success: true, data: predictionExample('generate_qr_art_v5', 'queued') } } },
            },
            ...errors([400, 401, 402, 413, 415, 422, 503]),
          },
        },
        get: {
          tags: ['predictions'],
          operationId: 'createOutpaintingWithGet',
          summary: 'Create an outpainting prediction (spec 4.3 names GET; body as for POST)',
          description: 'Browsers and this page cannot send a body with GET; use POST, which accepts every workflow.',
          parameters: [idempotencyKey],
          requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${componentName('outpainting')}` }, examples: bodyExamples(['outpainting']) } } },
          responses: {
            '200': { description: 'queued', headers: createdHeaders, content: { 'application/json': { schema: { $ref: '#/components/schemas/PredictionEnvelope' } } } },
            ...errors([400, 401, 402, 405, 413, 415, 422, 503]),
          },
        },
      },
      '/v1/predictions/quote': {
        post: {
          tags: ['free'],
          operationId: 'quotePrediction',
          summary: 'Price a create body without creating anything',
          description: 'Validates the body with the same rules as create and answers what it would cost and how it would be normalized. No key, no charge; rate-limited per client address like the preview.',
          security: [],
          requestBody: { required: true, content: { 'application/json': { schema: createBodySchema(WORKFLOWS), examples: bodyExamples(WORKFLOWS) } } },
          responses: {
            '200': {
              description: 'the price and the normalized input',
              content: {
                'application/json': {
                  schema: { $ref: '#/components/schemas/Quote' },
                  example: { success: true, data: { workflow: 'generate_qr_art_v5', credits: centsToCredits(v5.costCents), input: v5.input } },
                },
              },
            },
            ...errors([400, 413, 415, 429]),
          },
        },
      },
      '/v1/qr/preview': {
        post: {
          tags: ['free'],
          operationId: 'previewQrLayout',
          summary: 'Preview where the code goes (PNG of the control image)',
          description:
            `The control image the worker would condition on (the one \`qr-art qr render\` writes), at the output's aspect ratio, its long side at most 512 px. ` +
            `Takes a create body of a workflow whose code the service draws (${PREVIEW_WORKFLOWS.join(', ')}), validated like create; ` +
            '`prompt` (or `qrText`) may be left out: only the layout is drawn. ' +
            'v1-v3b bring their own code image and outpainting has none: 400 with rule `workflow_has_preview`. No key, no charge; rate-limited per client address.',
          security: [],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                // Not the Create_* schemas: those require the prompt, which a preview may leave out.
                schema: {
                  type: 'object',
                  required: ['workflow'],
                  description: "a create body of one of these workflows (its Create_* schema), prompt or qrText optional",
                  properties: { workflow: { enum: PREVIEW_WORKFLOWS } },
                },
                examples: Object.fromEntries(PREVIEW_WORKFLOWS.map((name) => [name, { summary: name, value: previewExample(name) }])),
              },
            },
          },
          responses: {
            '200': {
              description: 'the control image',
              headers: {
                'x-qr-layout': {
                  description: 'JSON of the layout at full output size: `{"width","height","x","y","side","codeSide","version"}` (schema QrLayout)',
                  schema: { type: 'string', contentMediaType: 'application/json', contentSchema: { $ref: '#/components/schemas/QrLayout' } },
                },
                'x-credits': { description: 'what creating this prediction would cost, in credits', schema: { type: 'string', example: String(centsToCredits(v5.costCents)) } },
              },
              content: { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } } },
            },
            ...errors([400, 413, 415, 429], {
              workflow_has_preview: {
                summary: 'a workflow without a server-drawn code (v1-v3b, outpainting)',
                value: invalidRequest([
                  { field: 'workflow', rule: 'workflow_has_preview', message: 'generate_qr_art_v2 has no layout drawn by the server to preview; the v4 and v5 workflows do' },
                ]).toBody(),
              },
            }),
          },
        },
      },
      '/v1/predictions/{predictionId}': {
        get: {
          tags: ['predictions'],
          operationId: 'getPrediction',
          summary: 'Get a prediction',
          parameters: [predictionId],
          responses: {
            '200': {
              description: 'the prediction',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/PredictionEnvelope' }, example: { success: true, data: predictionExample('generate_qr_art_v5', 'executed') } } },
            },
            ...errors([401, 404, 503]),
          },
        },
      },
      '/v1/predictions/{predictionId}/events': {
        get: {
          tags: ['predictions'],
          operationId: 'followPrediction',
          summary: 'Follow a prediction as server-sent events',
          description: [
            'A `text/event-stream` of the prediction as it changes. Browsers cannot send `x-api-key` with `EventSource`: read it with `fetch()` and an SSE parser (the TS client does). Events:',
            '',
            '- `prediction`: `data` is the prediction record (exactly `data` of GET /v1/predictions/{predictionId}); sent at once on connect and again whenever its status changes.',
            '- `progress`: `data` is `{"step": n, "total": m}`, denoising steps done and all steps of the job (a batch is denoised together); the first and last step always, those between at most 4 a second.',
            '- a comment `: keep-alive` every 15 s.',
            '',
            'The server ends the stream right after a `prediction` event whose status is `executed` or `failed`. A client that loses the stream reconnects or falls back to polling GET /v1/predictions/{predictionId}. ' +
              '(Try it out on this page shows the events only once the stream has ended.)',
          ].join('\n'),
          parameters: [predictionId],
          responses: {
            '200': { description: 'the event stream', content: { 'text/event-stream': { schema: { type: 'string' }, example: SSE_EXAMPLE } } },
            ...errors([401, 404, 503]),
            '429': {
              description: `the key already holds EVENT_STREAMS_PER_KEY streams on this replica (default ${DEFAULT_EVENT_STREAMS_PER_KEY}); close one, or poll GET /v1/predictions/{predictionId}`,
              headers: retryAfter,
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples: { stream_limit: { summary: 'too many open streams for this key', value: streamLimited } } } },
            },
          },
        },
      },
      '/v1/predictions': {
        get: {
          tags: ['predictions'],
          operationId: 'listPredictions',
          summary: 'List predictions, newest first',
          parameters: [
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
            { name: 'page', in: 'query', description: '1-based page of `limit` predictions, read as offset (page - 1) x limit; not together with offset', schema: { type: 'integer', minimum: 1 } },
          ],
          responses: {
            '200': { description: 'a page of predictions', content: { 'application/json': { schema: { $ref: '#/components/schemas/PredictionPage' }, example: listExample() } } },
            ...errors([400, 401, 503]),
          },
        },
      },
      '/v1/files/{name}': {
        get: {
          tags: ['files'],
          operationId: 'getFile',
          summary: 'An output image (no key needed; the name is unguessable)',
          security: [],
          parameters: [
            { name: 'name', in: 'path', required: true, description: 'the last part of an `output.images` URL', schema: { type: 'string' } },
            { name: 'if-none-match', in: 'header', required: false, description: 'the etag of a copy already held (weak tags, lists and * count): answered 304', schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: 'image (its type follows the name\'s extension)',
              content: Object.fromEntries(['image/png', 'image/jpeg', 'image/webp'].map((type) => [type, { schema: { type: 'string', contentMediaType: type } }])),
            },
            '304': { description: 'not modified: If-None-Match named the file\'s etag (files never change)' },
            ...errors([404, 503]),
          },
        },
      },
      '/healthz': { get: { tags: ['health'], operationId: 'healthz', summary: 'Process is up', security: [], responses: { '200': { description: 'ok' } } } },
      '/readyz': {
        get: { tags: ['health'], operationId: 'readyz', summary: 'This process can take requests (under start: its worker too); reports the database and NATS', security: [], responses: { '200': { description: 'ready; dependencies says whether the database and NATS answer' }, '503': { description: 'not ready: checks names what failed' } } },
      },
    },
    webhooks: {
      predictionChanged: {
        post: {
          summary: 'A prediction created with `webhook` changed status',
          description:
            'POSTed to the `webhook` URL on `executing`, `executed` and `failed`; the body is GET /v1/predictions/{predictionId} at that moment. ' +
            'Signed per Standard Webhooks with WEBHOOK_SECRET: verify `webhook-signature` with any Standard Webhooks library and deduplicate on `webhook-id`. ' +
            'A 2xx ends the delivery; connect errors, timeouts, 408, 429 and 5xx are retried (5 s, 30 s, 2 min, … up to 10 h, or after Retry-After); other 4xx and redirects end it.',
          security: [],
          parameters: [
            { name: 'webhook-id', in: 'header', required: true, description: '`msg_<predictionId>_<status>`: the same on every retry of one delivery', schema: { type: 'string' } },
            { name: 'webhook-timestamp', in: 'header', required: true, description: 'unix seconds', schema: { type: 'string' } },
            { name: 'webhook-signature', in: 'header', required: true, description: '`v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>`', schema: { type: 'string' } },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/PredictionEnvelope' }, example: { success: true, data: predictionExample('generate_qr_art_v4s', 'executed') } } } },
          responses: {
            '2XX': { description: 'received: the delivery ends' },
            '5XX': { description: 'retried later (as are 408, 429, connect errors and timeouts)' },
          },
        },
      },
    },
  };
}

export function componentName(workflow: string): string {
  return `Create_${workflow.replace(/[^A-Za-z0-9]/g, '_')}`;
}
