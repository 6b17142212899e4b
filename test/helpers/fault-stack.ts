import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigSchema, type Config } from '../../src/config.ts';
import { startApiService, type ApiService } from '../../src/runtime/api-service.ts';
import { freePort, startLocalNats, type LocalNats } from '../../src/runtime/local-nats.ts';
import { testDatabaseUrl } from './database.ts';
import { testConfig, waitFor } from './service.ts';

/**
 * A stack for fault drills: the API in this process (PGlite or TEST_DATABASE_URL), a real
 * nats-server with JetStream on disk that can be stopped and started again on the same port
 * and store (clients reconnect to the URL they know), and workers as child processes
 * (`qr-art worker`) that can be killed with SIGKILL.
 */

const BIN = path.resolve(import.meta.dirname, '../../bin/qr-art.js');

export interface WorkerProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Everything the process wrote, stdout and stderr interleaved as received. */
  output(): string;
  stderr(): string;
  /** stdout lines that parsed as JSON (pino records). */
  records(): Record<string, any>[];
  /** Resolves once a log record matches (rejects if the process exits first or the time runs out). */
  waitForRecord(match: (record: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isRunning(): boolean;
  /** SIGTERM, then SIGKILL if it has not exited within graceMs; resolves on exit. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface FaultStack {
  readonly api: ApiService;
  readonly baseUrl: string;
  readonly config: Config;
  readonly natsUrl: string;
  /** The JetStream store directory (kept across stopNats/startNats). */
  readonly natsStoreDir: string;
  /** Stops nats-server (SIGTERM, as a restart by an operator or a supervisor does); the store stays. */
  stopNats(): Promise<void>;
  /** Starts nats-server again on the same port and store directory. */
  startNats(): Promise<void>;
  /**
   * Starts `qr-art worker` as a child process against this stack's NATS, with this stack's
   * JOB_ACK_WAIT_MS / JOB_MAX_DELIVER (the worker also writes the consumer's settings at start)
   * and ALLOW_PRIVATE_URLS; `env` adds or overrides (e.g. MODELS_MANIFEST, WORKER_PIPELINE).
   */
  spawnWorker(name: string, env?: Record<string, string>): WorkerProcess;
  call(method: string, urlPath: string, options?: { key?: string; body?: unknown }): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export async function startFaultStack(options: { env?: Record<string, string> } = {}): Promise<FaultStack> {
  const natsStoreDir = await mkdtemp(path.join(tmpdir(), 'qrart-nats-'));
  const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-data-'));
  const natsPort = await freePort();
  let nats: LocalNats | null = await startLocalNats(natsStoreDir, { port: natsPort });
  const natsUrl = nats.url;
  const database = await testDatabaseUrl();
  const config = testConfig(dataDir, database.url, options.env);
  const logger = pino({ level: config.LOG_LEVEL });
  const api = await startApiService({ config: { ...config }, natsUrl, logger });
  const workers: WorkerProcess[] = [];

  return {
    api,
    baseUrl: api.address,
    config,
    natsUrl,
    natsStoreDir,
    async stopNats() {
      await nats?.stop();
      nats = null;
    },
    async startNats() {
      if (nats) throw new Error('nats-server is already running');
      nats = await startLocalNats(natsStoreDir, { port: natsPort });
    },
    spawnWorker(name, env = {}) {
      const worker = spawnWorkerProcess(name, {
        NATS_URL: natsUrl,
        JOB_ACK_WAIT_MS: String(config.JOB_ACK_WAIT_MS),
        JOB_MAX_DELIVER: String(config.JOB_MAX_DELIVER),
        ALLOW_PRIVATE_URLS: String(config.ALLOW_PRIVATE_URLS),
        WORKER_ID: name,
        ...env,
      });
      workers.push(worker);
      return worker;
    },
    async call(method, urlPath, callOptions = {}) {
      const headers: Record<string, string> = {};
      if (callOptions.key) headers['x-api-key'] = callOptions.key;
      let body: string | undefined;
      if (callOptions.body !== undefined) {
        body = JSON.stringify(callOptions.body);
        headers['content-type'] = 'application/json';
      }
      const response = await fetch(`${api.address}${urlPath}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: response.status, body: parsed };
    },
    async stop() {
      await Promise.all(workers.map((worker) => worker.stop(5000)));
      await api.stop();
      await nats?.stop();
      await database.drop();
      await rm(natsStoreDir, { recursive: true, force: true });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * `node bin/qr-art.js worker` from the TypeScript sources. The environment is this process's
 * minus every variable the service reads (so a developer's shell does not leak in), plus `env`.
 */
export function spawnWorkerProcess(name: string, env: Record<string, string>): WorkerProcess {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(ConfigSchema.shape)) delete base[key];
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: { ...base, QR_ART_FROM_SOURCE: '1', LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stderr = '';
  let pendingLine = '';
  const records: Record<string, any>[] = [];
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    pendingLine += text;
    const lines = pendingLine.split('\n');
    pendingLine = lines.pop()!;
    for (const line of lines) {
      try {
        records.push(JSON.parse(line));
      } catch {
        /* not a log record */
      }
    }
    for (const listener of listeners) listener();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stderr += chunk.toString();
  });
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      for (const listener of listeners) listener();
      resolve({ code, signal });
    });
  });

  const worker: WorkerProcess = {
    name,
    child,
    output: () => output,
    stderr: () => stderr,
    records: () => records,
    isRunning: () => running,
    exited,
    waitForRecord(match, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = records.find(match);
          if (found) return finish(() => resolve(found));
          if (!running) finish(() => reject(new Error(`worker ${name} exited before the awaited log record:\n${output.slice(-4000)}`)));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`worker ${name}: no matching log record within ${timeoutMs} ms:\n${output.slice(-4000)}`))), timeoutMs);
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    async stop(graceMs = 10_000) {
      if (running) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        const result = await exited;
        clearTimeout(timer);
        return result;
      }
      return exited;
    },
  };
  return worker;
}

/** The worker's "pulling jobs" record: models loaded, consumer bound. */
export const isPulling = (record: Record<string, any>) => record.msg === 'worker pulling jobs';

/** Polls a prediction until its status is one of `statuses`. */
export function waitForStatus(stack: Pick<FaultStack, 'call'>, key: string, id: string, statuses: readonly string[], timeoutMs = 120_000): Promise<any> {
  return waitFor(async () => {
    const got = await stack.call('GET', `/v1/predictions/${id}`, { key });
    return statuses.includes(got.body?.data?.status) ? got.body.data : undefined;
  }, timeoutMs, 200);
}

/** A client's view of the stack for one API key: create (expects 200 queued), get, and the ledger rows of a prediction. */
export function predictionsOf(stack: Pick<FaultStack, 'call' | 'api'>, key: string) {
  return {
    async create(body: Record<string, unknown>): Promise<{ id: string; credits: number }> {
      const created = await stack.call('POST', '/v1/predictions/queue', { key, body });
      if (created.status !== 200 || created.body?.data?.status !== 'queued') throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
      return created.body.data as { id: string; credits: number };
    },
    async get(id: string): Promise<any> {
      return (await stack.call('GET', `/v1/predictions/${id}`, { key })).body.data;
    },
    async ledgerOf(id: string): Promise<{ reason: string; cents: number }[]> {
      const { rows } = await stack.api.db.query<{ reason: string; delta_cents: string }>('SELECT reason, delta_cents FROM credit_ledger WHERE prediction_id = $1 ORDER BY id', [id]);
      return rows.map((row) => ({ reason: row.reason, cents: Number(row.delta_cents) }));
    },
  };
}
