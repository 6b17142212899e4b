/**
 * The worker's own HTTP endpoint (WORKER_METRICS_PORT), for the orchestrator's probes, with the
 * API's health routes:
 *   /healthz   the process answers (liveness)
 *   /readyz    200 when it can take jobs: pulling, connected to NATS, and the inference thread
 *              ready; 503 naming what is not (a thread restarting after a crash, a device given up)
 */
import Fastify from 'fastify';
import type { Logger } from 'pino';
import { healthRoutes, type ReadinessCheck } from '../api/routes/health.ts';

export interface WorkerHealthServer {
  readonly address: string;
  close(): Promise<void>;
}

export async function startWorkerHealthServer(options: { port: number; host: string; checks: Record<string, ReadinessCheck>; logger: Logger }): Promise<WorkerHealthServer> {
  const server = Fastify({ loggerInstance: options.logger.child({ component: 'worker-http' }), disableRequestLogging: true });
  await server.register(healthRoutes, { checks: options.checks });
  const address = await server.listen({ port: options.port, host: options.host });
  return { address, close: () => server.close() };
}
