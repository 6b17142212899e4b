import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { encodePng, resizeImage } from '../../image/decode.ts';
import { renderControlImage } from '../../qr/control-image.ts';
import { controlPlanFor, drawsCode } from '../../workflows/control.ts';
import { isWorkflowName } from '../../workflows/names.ts';
import { centsToCredits } from '../../workflows/pricing.ts';
import { parseCreateBody, type ParsedPrediction } from '../../workflows/validate.ts';
import { ApiError, invalidRequest } from '../errors.ts';

export interface FreeToolsOptions {
  allowPrivateUrls: boolean;
  /** Requests per minute per client address (PREVIEW_RATE_LIMIT), for the preview and the quote together. */
  perMinute: number;
}

/** The preview's long side: enough to judge where the code sits, cheap to draw and send. */
export const PREVIEW_MAX_SIDE = 512;

/**
 * What a person can ask before paying, without a key: where the code will sit (the control
 * image `qr-art qr render` writes, from the same code) and what a create would cost. Both
 * validate the body by the create's own rules, so a body that previews also creates.
 */
export async function freeToolRoutes(app: FastifyInstance, options: FreeToolsOptions): Promise<void> {
  // Keyless and CPU-bound (the preview draws an image): bounded per client address.
  await app.register(rateLimit, {
    max: options.perMinute,
    timeWindow: 60_000,
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        429,
        'rate_limited',
        `at most ${context.max} previews and quotes a minute from one address; retry after ${Math.ceil(context.ttl / 1000)} s`,
        [{ field: '', rule: 'rate_limit' }],
        Math.ceil(context.ttl / 1000),
      ),
  });

  const parse = (body: unknown): ParsedPrediction => {
    const parsed = parseCreateBody(body, { allowPrivateUrls: options.allowPrivateUrls, randomSeed: () => 0 });
    if (!parsed.ok) throw invalidRequest(parsed.issues);
    return parsed.value;
  };

  const noPreview = (workflow: string) =>
    invalidRequest([{ field: 'workflow', rule: 'workflow_has_preview', message: `${workflow} has no layout drawn by the server to preview; the v4 and v5 workflows do` }]);

  app.post('/v1/predictions/quote', async (request) => {
    const { workflow, input, costCents } = parse(request.body);
    // The seed a create would draw is not drawn here: it stays absent unless the body gave one.
    const given = request.body as Record<string, unknown>;
    if (given.seed === undefined || given.seed === null) delete input.seed;
    return { success: true, data: { workflow, credits: centsToCredits(costCents), input } };
  });

  // Without it GET and HEAD here would reach /v1/predictions/:id: a key asked for, then a 404
  // for a prediction "quote". A refusal costs nothing, so it is not rate limited.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/v1/predictions/quote',
    config: { refusesMethod: true, rateLimit: false },
    handler: async (request, reply) => {
      void reply.header('allow', 'POST');
      throw new ApiError(405, 'method_not_allowed', `/v1/predictions/quote accepts POST, not ${request.method}`, [
        { field: 'method', rule: 'allowed_methods', message: 'use POST' },
      ]);
    },
  });

  app.post('/v1/qr/preview', async (request, reply) => {
    const body = request.body;
    const given = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    // Before the fields: a workflow with nothing to draw is told so, not asked for its required fields first.
    if (given && isWorkflowName(given.workflow) && !drawsCode(given.workflow)) throw noPreview(given.workflow);
    // The layout is what is previewed: the text fields a create requires may still be empty
    // (absent, null, or blank).
    const blank = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
    const withText = given ? { ...given, prompt: blank(given.prompt) ? 'preview' : given.prompt, qrText: blank(given.qrText) ? 'preview' : given.qrText } : body;
    const { workflow, input, costCents } = parse(withText);
    const plan = controlPlanFor(workflow, input);
    if (plan.kind !== 'content') throw noPreview(workflow);
    const control = renderControlImage(plan);
    const { width, height } = plan.canvas;
    const scale = Math.min(1, PREVIEW_MAX_SIDE / Math.max(width, height));
    const small = scale < 1 ? await resizeImage(control.image, Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale)), 'fill') : control.image;
    const layout = { width, height, codeSide: control.layout.codePixels, ...plan.placement, version: control.matrix.version };
    return reply
      .type('image/png')
      .header('cache-control', 'no-store')
      .header('x-qr-layout', JSON.stringify(layout))
      .header('x-credits', String(centsToCredits(costCents)))
      .send(await encodePng(small));
  });
}
