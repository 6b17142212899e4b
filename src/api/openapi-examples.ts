/**
 * The examples of the OpenAPI document (openapi.ts): a create body per workflow, the records,
 * pages and error bodies they lead to. Built with the real validator (parseCreateBody) and the
 * routes' own error helpers, so /docs shows what the service answers.
 */
import { IdempotencyKeyReusedError } from '../store/idempotency.ts';
import { InsufficientCreditsError } from '../store/predictions.ts';
import { DependencyUnavailableError } from '../util/unavailable.ts';
import { QR_WORKFLOWS, type WorkflowName } from '../workflows/names.ts';
import { centsToCredits } from '../workflows/pricing.ts';
import { parseCreateBody } from '../workflows/validate.ts';
import { ApiError, DEFAULT_EVENT_STREAMS_PER_KEY, invalidRequest, notFound, serviceUnavailable, streamLimitReached, unauthorized } from './errors.ts';
import { DEFAULT_LIMIT } from './pagination.ts';

/**
 * A realistic create body per workflow. Keyed by WorkflowName so that a new workflow without
 * an example does not compile; each one must pass parseCreateBody unchanged (tested).
 */
export const CREATE_EXAMPLES: Readonly<Record<WorkflowName, Readonly<Record<string, unknown>>>> = {
  generate_qr_art: {
    workflow: 'generate_qr_art',
    qrText: 'a medieval village in autumn seen from above, warm evening light',
    qrImage: 'https://example.com/codes/menu-qr.png',
    qrStrength: 0.9,
    qrSteps: 16,
  },
  'generate_qr_art_v1.1': {
    workflow: 'generate_qr_art_v1.1',
    qrText: 'a coral reef with tropical fish, sunlight through clear water',
    qrImage: 'https://example.com/codes/aquarium-qr.png',
    negativePrompt: 'blurry, text, watermark',
    seed: 424242,
  },
  generate_qr_art_v2: {
    workflow: 'generate_qr_art_v2',
    qrText: 'a japanese zen garden, raked sand and moss, overcast light',
    qrImage: 'https://example.com/codes/tea-house-qr.png',
    qrStrength: 1.1,
    qrSteps: 18,
  },
  generate_qr_art_v3a: {
    workflow: 'generate_qr_art_v3a',
    qrText: 'a steampunk clock tower, brass gears, foggy street',
    qrImage: 'https://example.com/codes/watchmaker-qr.png',
    qrRepair: 'on_failure',
  },
  generate_qr_art_v3b: {
    workflow: 'generate_qr_art_v3b',
    qrText: 'a field of sunflowers under a summer sky, oil painting',
    qrImage: 'https://example.com/codes/farm-shop-qr.png',
    qrStrength: 0.8,
    webhook: 'https://example.com/hooks/qr-art',
  },
  generate_qr_art_v4: {
    workflow: 'generate_qr_art_v4',
    qrText: 'a cozy coffee shop interior, wooden tables, morning light',
    qrContent: 'https://example.com/menu',
    qrStrength: 1.5,
    batchSize: 2,
  },
  generate_qr_art_v4s: {
    workflow: 'generate_qr_art_v4s',
    qrText: 'snowy mountain peaks at sunrise, alpine lake',
    qrContent: 'https://example.com/ski-pass',
    qrSteps: 20,
    seed: 1234,
    webhook: 'https://example.com/hooks/qr-art',
  },
  generate_qr_art_v4real: {
    workflow: 'generate_qr_art_v4real',
    qrText: 'a fresh bowl of ramen on a dark wooden table, studio photo',
    qrContent: 'https://example.com/order',
    qrStrength: 1.4,
    qrSteps: 25,
  },
  generate_qr_art_v4niji: {
    workflow: 'generate_qr_art_v4niji',
    qrText: 'anime city street at night, neon signs, rain reflections',
    qrContent: 'WIFI:T:WPA;S:CafeGuest;P:espresso42;;',
    negativePrompt: 'lowres, bad anatomy',
  },
  generate_qr_art_v4dream: {
    workflow: 'generate_qr_art_v4dream',
    qrText: 'an enchanted forest with glowing mushrooms, misty',
    qrContent: 'mailto:hello@example.com',
    batchSize: 4,
    qrRepair: 'always',
  },
  generate_qr_art_v5: {
    workflow: 'generate_qr_art_v5',
    prompt: 'a lighthouse on a rocky coast at golden hour, waves crashing',
    qrContent: 'https://example.com/tour',
    negativePrompt: 'text, watermark',
    model: 'real',
    aspectRatio: '3:4',
    resolution: 'HD',
    qrCodePartern: 'rd2',
    qrRatio: 0.5,
    preset: 'photographic',
    steps: 30,
    cfg: 7,
    batchSize: 2,
    enhance: 'face',
    seed: 987654321,
    webhook: 'https://example.com/hooks/qr-art',
  },
  generate_qr_art_v5s: {
    workflow: 'generate_qr_art_v5s',
    prompt: 'a paper-cut landscape of rolling hills and a red sun',
    qrContent: 'https://example.com/gallery',
    aspectRatio: '16:9',
    qrRatio: 0.6,
    qrX: 600,
    qrY: 120,
    qrCodePartern: 'c1',
    preset: 'origami',
  },
  outpainting: {
    workflow: 'outpainting',
    image: 'https://example.com/photos/beach.jpg',
    prompt: 'a wide sandy beach with palm trees and a calm sea',
    image_width: 768,
    image_height: 512,
    padding_left: 128,
    padding_right: 128,
    padding_top: 0,
    padding_bottom: 64,
    type: 'one_shot',
  },
};

/** Workflows whose QR code the service draws (v4 and v5 families): the ones POST /v1/qr/preview answers. */
export const PREVIEW_WORKFLOWS = QR_WORKFLOWS.filter((name) => 'qrContent' in CREATE_EXAMPLES[name]);

/** A preview body: a create example without its prompt, which the preview does not need. */
export function previewExample(workflow: WorkflowName): Record<string, unknown> {
  const { prompt: _prompt, qrText: _qrText, webhook: _webhook, ...layout } = CREATE_EXAMPLES[workflow];
  return layout;
}

/** The normalized input and price of an example, exactly as the validator makes them. */
export function parsedExample(workflow: WorkflowName) {
  // A fixed seed for the examples that leave it out, so the document is the same on every build.
  const parsed = parseCreateBody(CREATE_EXAMPLES[workflow], { allowPrivateUrls: false, randomSeed: () => 730_155_482 });
  if (!parsed.ok) throw new Error(`the ${workflow} example is refused by the validator: ${JSON.stringify(parsed.issues)}`);
  return parsed.value;
}

export const EXAMPLE_ID = '3f0c6a52-8d1e-4b7a-9c2f-5e8d41a7b903';

export function predictionExample(workflow: WorkflowName, status: 'queued' | 'executed') {
  const { input, imageCount, costCents } = parsedExample(workflow);
  const done = status === 'executed';
  const images = Array.from({ length: imageCount }, (_, i) => `https://qr-art.example.com/v1/files/${['kQ2v8xY1TzR4mN7pL0sWcA', 'Hn3bV6uJ9eX2qT5yR8wZdg'][i % 2]}.png`);
  return {
    id: EXAMPLE_ID,
    userId: 'alice',
    createdAt: '2025-06-01T12:00:00.000Z',
    startedAt: done ? '2025-06-01T12:00:01.250Z' : null,
    updatedAt: done ? '2025-06-01T12:00:09.800Z' : '2025-06-01T12:00:00.000Z',
    completedAt: done ? '2025-06-01T12:00:09.800Z' : null,
    status,
    input,
    output: done ? { images, scanRobustness: images.map(() => 1) } : '',
    error: null,
    refunded: false,
    creditType: 'API_CREDITS',
    isScanables: done ? images.map(() => true) : [],
    credits: centsToCredits(costCents),
  };
}

export const LISTED_FIELDS = ['userId', 'status', 'refunded', 'creditType', 'credits', 'output', 'startedAt', 'completedAt', 'id', 'input'] as const;

export function listExample() {
  const full = predictionExample('generate_qr_art_v4s', 'executed');
  const doc = Object.fromEntries(LISTED_FIELDS.map((field) => [field, full[field]]));
  return {
    data: {
      docs: [doc],
      totalDocs: 1,
      offset: 0,
      limit: DEFAULT_LIMIT,
      totalPages: 1,
      page: 1,
      pagingCounter: 1,
      hasPrevPage: false,
      hasNextPage: false,
      prevPage: null,
      nextPage: null,
    },
  };
}

/** A body the validator refuses, and the 400 it really gets. */
function invalidRequestExample() {
  const parsed = parseCreateBody({ ...CREATE_EXAMPLES.generate_qr_art_v4s, qrStrength: 4, qrSteps: 80 }, { allowPrivateUrls: false });
  if (parsed.ok) throw new Error('the invalid_request example was accepted by the validator');
  return invalidRequest(parsed.issues).toBody();
}

/** The events route's 429, at the default EVENT_STREAMS_PER_KEY. */
export const streamLimited = streamLimitReached(DEFAULT_EVENT_STREAMS_PER_KEY).toBody();
const rateLimited = new ApiError(429, 'rate_limited', 'at most 120 previews and quotes a minute from one address; retry after 23 s', [{ field: '', rule: 'rate_limit' }]).toBody();

export type ErrorExample = { summary: string; value: unknown };

/** One realistic error body per status, built with the same helpers the routes use. */
export function errorExamples(): Record<number, Record<string, ErrorExample>> {
  const credits = new InsufficientCreditsError(298, 150);
  return {
    400: {
      invalid_request: { summary: 'a field breaks a rule (every broken rule is listed)', value: invalidRequestExample() },
      invalid_json: {
        summary: 'the body is not JSON',
        value: new ApiError(400, 'invalid_json', 'the body is not valid JSON: Unexpected end of JSON input', [{ field: '', rule: 'json' }]).toBody(),
      },
    },
    401: { unauthorized: { summary: 'missing, unknown or revoked x-api-key', value: unauthorized('missing x-api-key header').toBody() } },
    402: {
      insufficient_credits: {
        summary: 'the balance does not cover the cost; nothing was charged',
        value: new ApiError(402, 'insufficient_credits', credits.message, [{ field: 'credits', rule: 'balance', message: credits.message }]).toBody(),
      },
    },
    404: { not_found: { summary: "unknown id, or another user's prediction", value: notFound('prediction').toBody() } },
    405: {
      method_not_allowed: {
        summary: 'GET with a workflow other than outpainting',
        value: new ApiError(405, 'method_not_allowed', 'GET /v1/predictions/queue accepts only an outpainting body; use POST for every workflow', [
          { field: 'workflow', rule: 'get_only_outpainting' },
        ]).toBody(),
      },
    },
    413: {
      payload_too_large: {
        summary: 'body over BODY_LIMIT_BYTES',
        value: new ApiError(413, 'payload_too_large', 'Request body is too large', [{ field: '', rule: 'max_body_size' }]).toBody(),
      },
    },
    415: {
      unsupported_media_type: {
        summary: 'the body is not application/json',
        value: new ApiError(415, 'unsupported_media_type', 'send the body as Content-Type: application/json', [{ field: 'content-type', rule: 'application/json' }]).toBody(),
      },
    },
    422: {
      idempotency_key_reused: {
        summary: 'the Idempotency-Key was used with another body; nothing was charged',
        value: new ApiError(422, 'idempotency_key_reused', new IdempotencyKeyReusedError('order-2025-06-01-0042').message, [
          { field: 'idempotency-key', rule: 'same_request' },
        ]).toBody(),
      },
    },
    429: { rate_limited: { summary: 'over PREVIEW_RATE_LIMIT requests a minute from this address', value: rateLimited } },
    503: {
      service_unavailable: {
        summary: 'the database or NATS cannot answer right now; nothing was changed',
        value: serviceUnavailable(new DependencyUnavailableError('database', 2)).toBody(),
      },
    },
  };
}
