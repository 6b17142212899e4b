import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyError } from 'fastify';
import type { Logger } from 'pino';
import type { ObjectStore } from '@nats-io/obj';
import type { Database } from '../store/database.ts';
import type { OutboxRelay } from '../queue/outbox-relay.ts';
import { ApiError, toApiError } from './errors.ts';
import { docsRoutes } from './routes/docs.ts';
import { fileRoutes } from './routes/files.ts';
import { healthRoutes, type ReadinessCheck } from './routes/health.ts';
import { predictionRoutes } from './routes/predictions.ts';

export interface ApiDependencies {
  db: Database;
  relay: OutboxRelay;
  images: ObjectStore;
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
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error as FastifyError);
    if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    return reply.code(apiError.statusCode).send(apiError.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(404).send(error.toBody());
  });

  app.register(healthRoutes, { checks: deps.readiness });
  app.register(docsRoutes);
  app.register(fileRoutes, { images: deps.images });
  app.register(predictionRoutes, {
    db: deps.db,
    relay: deps.relay,
    allowPrivateUrls: deps.allowPrivateUrls,
    bodyLimit: deps.bodyLimit,
  });
  return app;
}

export type ApiApp = ReturnType<typeof buildApi>;
