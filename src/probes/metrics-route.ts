import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

/**
 * GET /metrics: a registry in Prometheus' text format. Served apart from the API (the API's
 * metrics port, the worker's health port), never through the API's own routes, so scrapes are
 * not counted in the HTTP metrics and an Ingress exposing the API does not expose them. The
 * scrape-time probes bound their own time (api/metrics-probes.ts), so this always answers.
 */
export async function metricsRoutes(app: FastifyInstance, options: { registry: Registry }): Promise<void> {
  app.get('/metrics', async (_request, reply) => {
    const body = await options.registry.metrics();
    return reply.header('content-type', options.registry.contentType).send(body);
  });
}
