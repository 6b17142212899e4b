/**
 * The JSON schemas of the API's response bodies, as /openapi.json lists them under
 * components.schemas (openapi.ts adds the request bodies, generated from the zod schemas).
 * docs/api.md is the prose contract they follow.
 */
import { WORKFLOWS } from '../workflows/names.ts';
import { LISTED_FIELDS } from './openapi-examples.ts';
import { MAX_LIMIT } from './pagination.ts';

const errorBody = {
  type: 'object',
  required: ['success', 'error'],
  properties: {
    success: { const: false },
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string', description: 'machine-readable; the codes and when each is sent are listed in docs/api.md' },
        message: { type: 'string' },
        details: {
          type: 'array',
          description: 'which field (a body field, or a header such as x-api-key) broke which rule; empty when no field is to blame',
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
  // Every record carries these, a listed one too (spec 2.3); a full record carries them all.
  required: [...LISTED_FIELDS],
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
        '"" while queued or executing; {"images":[url,…]} when executed (QR workflows add "scanRobustness", per image the share of simulated phone captures that read the code; outpainting without a prompt adds "caption", the text used as the prompt); "NSFW contents detected!" when rejected for NSFW',
      oneOf: [
        { type: 'string' },
        { type: 'object', properties: { images: { type: 'array', items: { type: 'string', format: 'uri' } }, caption: { type: 'string' }, scanRobustness: { type: 'array', items: { type: 'number', minimum: 0, maximum: 1 } } }, required: ['images'] },
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

const envelope = { type: 'object', required: ['success', 'data'], properties: { success: { const: true }, data: { $ref: '#/components/schemas/Prediction' } } };

const listPage = {
  type: 'object',
  required: ['data'],
  properties: {
    data: {
      type: 'object',
      required: ['docs', 'totalDocs', 'offset', 'limit', 'totalPages', 'page', 'pagingCounter', 'hasPrevPage', 'hasNextPage', 'prevPage', 'nextPage'],
      properties: {
        docs: {
          type: 'array',
          description: `newest first; each item carries ${LISTED_FIELDS.join(', ')} (spec 2.3)`,
          items: { $ref: '#/components/schemas/Prediction' },
        },
        totalDocs: { type: 'integer', minimum: 0 },
        offset: { type: 'integer', minimum: 0 },
        limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
        totalPages: { type: 'integer', minimum: 1 },
        page: { type: 'integer', minimum: 1 },
        pagingCounter: { type: 'integer', minimum: 1 },
        hasPrevPage: { type: 'boolean' },
        hasNextPage: { type: 'boolean' },
        prevPage: { type: ['integer', 'null'] },
        nextPage: { type: ['integer', 'null'] },
      },
    },
  },
};

const quote = {
  type: 'object',
  required: ['success', 'data'],
  properties: {
    success: { const: true },
    data: {
      type: 'object',
      required: ['workflow', 'credits', 'input'],
      properties: {
        workflow: { enum: [...WORKFLOWS] },
        credits: { type: 'number', description: 'what the create would charge, in credits (two decimals)' },
        input: { type: 'object', description: 'the normalized request: defaults filled in; seed stays absent when the body has none' },
      },
    },
  },
};

const qrLayout = {
  type: 'object',
  required: ['width', 'height', 'x', 'y', 'side', 'codeSide', 'version'],
  description: 'where the code sits on the full-size output, in output pixels',
  properties: {
    width: { type: 'integer', description: 'output width' },
    height: { type: 'integer', description: 'output height' },
    x: { type: 'integer', description: "left edge of the code's square, quiet zone included" },
    y: { type: 'integer', description: "top edge of the code's square, quiet zone included" },
    side: { type: 'integer', description: "side of the code's square, quiet zone included" },
    codeSide: { type: 'integer', description: "the modules' extent, quiet zone excluded" },
    version: { type: 'integer', minimum: 1, maximum: 40, description: 'QR version (size) the content needed' },
  },
};

/** By component name: what `$ref: '#/components/schemas/…'` points at. */
export const RESPONSE_SCHEMAS = { Error: errorBody, Prediction: record, PredictionEnvelope: envelope, PredictionPage: listPage, Quote: quote, QrLayout: qrLayout };
