import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { startApiService, type ApiService } from '../../src/runtime/api-service.ts';
import { startWorkerService, type WorkerService } from '../../src/runtime/worker-service.ts';
import { testDatabaseUrl } from './database.ts';
import { startTestNats } from './nats.ts';

export const TEST_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export interface TestStack {
  api: ApiService;
  worker: WorkerService | null;
  baseUrl: string;
  config: Config;
  nats: Awaited<ReturnType<typeof startTestNats>>;
  /**
   * Stops the API service only (NATS, database and DATA_DIR stay) and starts a new one on
   * the same configuration; `api` and `baseUrl` point at the new one afterwards (its port
   * may differ: PORT is 0).
   */
  restartApi(): Promise<ApiService>;
  /** fetch against the API with a key. */
  call(method: string, path: string, options?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  stop(): Promise<void>;
}

/** The configuration every test service runs with: loopback, a fixed webhook secret, private URLs allowed. */
export function testConfig(dataDir: string, databaseUrl: string | undefined, env: Record<string, string> = {}): Config {
  return loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    WEBHOOK_SECRET: TEST_SECRET,
    ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Any free port: test files run in parallel, and each service has its own /metrics.
    METRICS_PORT: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...env,
  });
}

/**
 * The real thing on loopback: nats-server, the database (PGlite or a PostgreSQL server),
 * the API on a free port, and optionally a worker daemon.
 */
export async function startTestStack(options: { worker?: boolean; env?: Record<string, string> } = {}): Promise<TestStack> {
  const nats = await startTestNats();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-data-'));
  const database = await testDatabaseUrl();
  const config = testConfig(dataDir, database.url, options.env);
  const logger = pino({ level: config.LOG_LEVEL });
  const worker = options.worker ? await startWorkerService({ config, natsUrl: nats.url, logger }) : null;
  let api = await startApiService({ config: { ...config }, natsUrl: nats.url, logger });
  let baseUrl = api.address;
  // Image URLs are built from PUBLIC_BASE_URL, which defaults to the configured port (0 here).
  return {
    get api() {
      return api;
    },
    worker,
    get baseUrl() {
      return baseUrl;
    },
    config,
    nats,
    async restartApi() {
      await api.stop();
      api = await startApiService({ config: { ...config }, natsUrl: nats.url, logger });
      baseUrl = api.address;
      return api;
    },
    async call(method, urlPath, callOptions = {}) {
      const headers: Record<string, string> = { ...callOptions.headers };
      if (callOptions.key !== null && callOptions.key !== undefined) headers['x-api-key'] = callOptions.key;
      let body: string | undefined;
      if (callOptions.rawBody !== undefined) body = callOptions.rawBody;
      else if (callOptions.body !== undefined) {
        body = JSON.stringify(callOptions.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${baseUrl}${urlPath}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: response.status, body: parsed, headers: response.headers };
    },
    async stop() {
      await worker?.stop();
      await api.stop();
      await nats.stop();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls until check returns a value (not undefined) or the timeout passes. */
export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting for condition');
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
