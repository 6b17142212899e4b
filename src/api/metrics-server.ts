/**
 * The API's metrics listener (METRICS_PORT, 9464 by default): GET /metrics and nothing else, on
 * a port of its own so that what exposes the API to clients does not expose the metrics.
 */
import Fastify, { LogController } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { metricsRoutes } from '../probes/metrics-route.ts';

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464 */
  readonly address: string;
  close(): Promise<void>;
}

export async function startMetricsServer(options: { port: number; host: string; registry: Registry; logger: Logger }): Promise<MetricsServer> {
  // A scrape every few seconds would drown the request log.
  const server = Fastify({ loggerInstance: options.logger.child({ component: 'metrics-http' }), logController: new LogController({ disableRequestLogging: true }) });
  await server.register(metricsRoutes, { registry: options.registry });
  const address = await server.listen({ port: options.port, host: options.host });
  return { address, close: () => server.close() };
}
