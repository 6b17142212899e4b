/**
 * The worker's own HTTP endpoint (WORKER_METRICS_PORT), for Prometheus and the orchestrator's
 * probes, with the same health and metrics routes as the API's (src/probes/):
 *   /metrics   the worker's registry (worker/metrics.ts)
 *   /healthz   the process answers (liveness)
 *   /readyz    200 when it can take jobs: pulling, connected to NATS, and the inference thread
 *              ready; 503 naming what is not (a thread restarting after a crash, a device given up)
 */
import Fastify, { LogController } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { healthRoutes, type ReadinessCheck } from '../probes/health-routes.ts';
import { metricsRoutes } from '../probes/metrics-route.ts';

export interface WorkerHealthServer {
  readonly address: string;
  close(): Promise<void>;
}

export async function startWorkerHealthServer(options: {
  port: number;
  host: string;
  checks: Record<string, ReadinessCheck>;
  registry: Registry;
  logger: Logger;
}): Promise<WorkerHealthServer> {
  const server = Fastify({ loggerInstance: options.logger.child({ component: 'worker-http' }), logController: new LogController({ disableRequestLogging: true }) });
  await server.register(healthRoutes, { checks: options.checks });
  await server.register(metricsRoutes, { registry: options.registry });
  const address = await server.listen({ port: options.port, host: options.host });
  return { address, close: () => server.close() };
}
