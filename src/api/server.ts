import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { ObjectStore } from '@nats-io/obj';
import type { Database } from '../store/database.ts';
import type { PredictionSubmitter } from '../predictions/create.ts';
import type { PredictionReader } from '../predictions/reader.ts';
import { ApiError, toApiError } from './errors.ts';
import { docsRoutes } from './routes/docs.ts';
import { fileRoutes } from './routes/files.ts';
import { healthRoutes, type ReadinessCheck } from './routes/health.ts';
import { predictionRoutes } from './routes/predictions.ts';

export interface ApiDependencies {
  db: Database;
  submitter: PredictionSubmitter;
  reader: PredictionReader;
  apiKeyCacheTtlMs: number;
  images: ObjectStore;
  /** Whether NATS is connected now (queue/connection.ts). */
  brokerConnected: () => boolean;
  logger: Logger;
  readiness: Record<string, ReadinessCheck>;
  allowPrivateUrls: boolean;
  bodyLimit: number;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The HTTP surface: where every request goes is listed here. */
export function buildApi(deps: ApiDependencies) {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.bodyLimit,
    // Honour a caller's x-request-id when it is sane, so logs join across services.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    // Router-level rejections (bad percent-encoding, an over-long path parameter) get our error body too.
    frameworkErrors: (error, _request, reply) => {
      const apiError = toApiError(error);
      void (reply as unknown as FastifyReply).code(apiError.statusCode).send(apiError.toBody());
    },
  });
  // Create bodies are JSON only (spec 4): without fastify's built-in text/plain parser a
  // text/plain body is a 415, as on GET /v1/predictions/queue, not a string that fails validation.
  app.removeContentTypeParser('text/plain');

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error as FastifyError);
    if (apiError.statusCode === 503) request.log.warn({ err: error }, 'dependency unavailable');
    else if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    if (apiError.retryAfterSeconds !== undefined) reply.header('retry-after', String(apiError.retryAfterSeconds));
    return reply.code(apiError.statusCode).send(apiError.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(404).send(error.toBody());
  });

  app.register(healthRoutes, { checks: deps.readiness });
  app.register(docsRoutes);
  app.register(fileRoutes, { images: deps.images, brokerConnected: deps.brokerConnected });
  app.register(predictionRoutes, {
    db: deps.db,
    submitter: deps.submitter,
    reader: deps.reader,
    apiKeyCacheTtlMs: deps.apiKeyCacheTtlMs,
    allowPrivateUrls: deps.allowPrivateUrls,
    bodyLimit: deps.bodyLimit,
  });
  return app;
}

export type ApiApp = ReturnType<typeof buildApi>;
