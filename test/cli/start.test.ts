import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/runtime/local-nats.ts';
import { scrape } from '../helpers/prometheus.ts';
import { waitFor } from '../helpers/service.ts';

const bin = path.resolve(import.meta.dirname, '../../bin/qr-art.js');
const KEY = 'start-test-key-0123456789abcdef';

describe('qr-art start', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('runs API, worker and a local nats-server; is ready; serves a prediction end to end; exposes both processes\' metrics; exits 0 on SIGTERM', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const port = await freePort();
    // Free ports rather than the defaults (9464, 9465): test files run in parallel.
    const [apiMetricsPort, workerMetricsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [bin, 'start'], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        API_KEYS: `dana:${KEY}:10`,
        LOG_LEVEL: 'warn',
        NATS_URL: '',
        METRICS_PORT: String(apiMetricsPort),
        WORKER_METRICS_PORT: String(workerMetricsPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const base = `http://127.0.0.1:${port}`;
    try {
      const ready = await waitFor(async () => {
        const response = await fetch(`${base}/readyz`).catch(() => null);
        return response?.ok ? ((await response.json()) as { checks: Record<string, boolean> }) : undefined;
      }, 45_000, 250);
      expect(ready.checks).toEqual({ database: true, nats: true, worker: true, inference: true });

      const created = await fetch(`${base}/v1/predictions/queue`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'generate_qr_art_v4s', qrText: 'neon city', qrContent: 'tel:+15551234567' }),
      });
      const { data } = (await created.json()) as { data: { id: string } };
      const done = await waitFor(async () => {
        const got = (await (await fetch(`${base}/v1/predictions/${data.id}`, { headers: { 'x-api-key': KEY } })).json()) as { data: { status: string; isScanables: boolean[] } };
        return got.data.status === 'executed' ? got.data : undefined;
      });
      expect(done.isScanables).toEqual([true]);

      // One process, two endpoints, each with its own series.
      const api = await scrape(`http://127.0.0.1:${apiMetricsPort}/metrics`);
      const worker = await scrape(`http://127.0.0.1:${workerMetricsPort}/metrics`);
      expect(api.value('qrart_http_requests_total', { method: 'POST', route: '/v1/predictions/queue', status: '200' })).toBe(1);
      expect(api.value('qrart_predictions_created_total', { workflow: 'generate_qr_art_v4s' })).toBe(1);
      expect(worker.value('qrart_worker_jobs_total', { workflow: 'generate_qr_art_v4s', outcome: 'executed' })).toBe(1);
      expect(api.types.has('qrart_worker_jobs_total')).toBe(false);
      expect(worker.types.has('qrart_http_requests_total')).toBe(false);
      for (const scraped of [api, worker]) expect(scraped.types.get('process_resident_memory_bytes')).toBe('gauge');
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(0);
  }, 90_000);

  it('explains how to install nats-server when the binary is missing', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const child = spawn(process.execPath, [bin, 'start'], {
      env: { ...process.env, DATA_DIR: dataDir, PORT: '0', NATS_URL: '', NATS_SERVER_BIN: '/nonexistent/nats-server' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('apt-get install -y nats-server');
  }, 30_000);
});
