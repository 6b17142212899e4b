import type { FastifyInstance } from 'fastify';

export type ReadinessCheck = () => Promise<boolean>;

/** /healthz: the process answers. /readyz: every dependency answers (503 otherwise, naming which). */
export async function healthRoutes(app: FastifyInstance, options: { checks: Record<string, ReadinessCheck> }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const entries = await Promise.all(
      Object.entries(options.checks).map(async ([name, check]) => [name, await withTimeout(check(), 2000)] as const),
    );
    const checks = Object.fromEntries(entries);
    const ready = entries.every(([, ok]) => ok);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });
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
