import type { FastifyInstance } from 'fastify';

export type ReadinessCheck = () => Promise<boolean>;

/** The probes' paths: an orchestrator's traffic, which request metrics leave out. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

export interface HealthRouteOptions {
  /** What this process needs of its own to take requests: any false makes /readyz 503. */
  checks: Record<string, ReadinessCheck>;
  /**
   * Services every replica shares (the database, NATS): reported, never a 503. When one is
   * down it is down for every replica at once, and taking them all out of a load balancer
   * would turn the API's own answers (503 with Retry-After; creates that wait in the outbox
   * while NATS is away) into the balancer's.
   */
  dependencies?: Record<string, ReadinessCheck>;
}

/** /healthz: the process answers. /readyz: this process is ready (503 otherwise, naming the check); shared services are reported beside. */
export async function healthRoutes(app: FastifyInstance, options: HealthRouteOptions): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const [checks, dependencies] = await Promise.all([runAll(options.checks), runAll(options.dependencies ?? {})]);
    const ready = Object.values(checks).every((ok) => ok);
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : 'not_ready', checks, ...(options.dependencies ? { dependencies } : {}) });
  });
}

async function runAll(checks: Record<string, ReadinessCheck>): Promise<Record<string, boolean>> {
  const entries = await Promise.all(Object.entries(checks).map(async ([name, check]) => [name, await withTimeout(check(), 2000)] as const));
  return Object.fromEntries(entries);
}

async function withTimeout(check: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([check.catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
