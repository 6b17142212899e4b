import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/flows.ts';
import { documentedMetrics, scrape, type DocumentedMetric, type Scrape } from '../helpers/prometheus.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

/**
 * docs/metrics.md is a contract a dashboard and the deployment's manifests are written against.
 * A real stack (API, a worker on the diffusion pipeline and the demo graphs, nats-server, the
 * database), both /metrics endpoints scraped before, during and after two real jobs: every
 * documented series is there with its type and labels, the names follow Prometheus' rules, and
 * the numbers move as the jobs go through.
 */

const KEY = 'key-metrics-0123456789abcdef0123456789a';
const WORKFLOW = 'generate_qr_art_v4s';
/** One device slot and nothing held ahead: the second job waits in the stream while the first runs. */
const ENV = { API_KEYS: `mia:${KEY}:100`, WORKER_METRICS_PORT: '0', WORKER_PREFETCH: '0', WARMUP_SIZES: 'off', FINISH_THREADS: '1' };

describe('Prometheus metrics', () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let documented: DocumentedMetric[];
  let apiUrl: string;
  let workerUrl: string;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    stack = await startTestStack({ worker: true, env: ENV });
    documented = await documentedMetrics();
    apiUrl = `${stack.api.metricsAddress}/metrics`;
    workerUrl = `${stack.worker!.httpAddress}/metrics`;
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
  });

  const scrapeBoth = async () => ({ api: await scrape(apiUrl), worker: await scrape(workerUrl) });
  const create = async (body: Record<string, unknown>) => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: WORKFLOW, ...body } });
    expect(created.status).toBe(200);
    return created.body.data as { id: string; credits: number };
  };
  const status = async (id: string) => (await stack.call('GET', `/v1/predictions/${id}`, { key: KEY })).body.data.status as string;

  it('serves every documented series with its type and labels, named by the rules, each process on its own port', async () => {
    expect(documented.length).toBeGreaterThan(25);
    expect(apiUrl).not.toBe(workerUrl);
    const { api, worker } = await scrapeBoth();
    for (const metric of documented) {
      const scraped = metric.process === 'api' ? api : worker;
      const other = metric.process === 'api' ? worker : api;
      expect(scraped.types.get(metric.name), `${metric.name} (${metric.process})`).toBe(metric.type);
      expect(other.types.has(metric.name), `${metric.name} only on the ${metric.process}'s endpoint`).toBe(false);
      const series = scraped.samples.get(metric.type === 'histogram' ? `${metric.name}_count` : metric.name) ?? [];
      // http_* have no series before the first request; every other one starts at 0 or is read at scrape time.
      if (!metric.name.startsWith('qrart_http_')) expect(series.length, `${metric.name} has series`).toBeGreaterThan(0);
      for (const sample of series) expect(Object.keys(sample.labels).sort(), metric.name).toEqual([...metric.labels].sort());
    }
    for (const scraped of [api, worker]) {
      // prom-client's process metrics, once per endpoint (each process has a registry of its own).
      expect(scraped.types.get('process_resident_memory_bytes')).toBe('gauge');
      expect(scraped.types.get('nodejs_heap_size_used_bytes')).toBe('gauge');
      expect(scraped.text.match(/^# TYPE process_resident_memory_bytes /gm)).toHaveLength(1);
      for (const [name, type] of scraped.types) {
        if (!name.startsWith('qrart_')) continue;
        expect(name).toMatch(/^qrart_[a-z]+(_[a-z]+)*$/);
        if (type === 'counter') expect(name).toMatch(/_total$/);
        else expect(name).not.toMatch(/_total$/);
        if (type === 'histogram') expect(name).toMatch(/_(seconds|bytes)$/);
        // Bounded labels: workflow names, never ids.
        for (const sample of scraped.samples.get(type === 'histogram' ? `${name}_count` : name) ?? []) {
          if ('workflow' in sample.labels) expect([...WORKFLOWS, 'unknown']).toContain(sample.labels.workflow);
          for (const value of Object.values(sample.labels)) expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
        }
      }
    }
  });

  it('moves as two real diffusion jobs go through: requests, charges, queue, stages, session runs, events, webhooks', async () => {
    const before = await scrapeBoth();

    const first = await create({ qrText: 'a harbour at dusk', qrContent: 'https://example.com/metrics', qrSteps: 10, seed: 7, qrRepair: 'always', webhook: `${receiver.url}/hook` });
    const second = await create({ qrText: 'a koi pond', qrContent: 'https://example.com/metrics/2', qrSteps: 10, seed: 8, qrRepair: 'off' });
    expect((await stack.call('GET', '/no/such/route', { key: KEY })).status).toBe(404);
    // The kubelet's probes are not counted.
    for (const probe of ['/healthz', '/readyz']) expect((await stack.call('GET', probe)).status).toBe(200);
    // A stream the client leaves while the job waits: no answer was completed, so `aborted`.
    const leaving = new AbortController();
    const stream = await fetch(`${stack.baseUrl}/v1/predictions/${second.id}/events`, { headers: { 'x-api-key': KEY }, signal: leaving.signal });
    await stream.body!.getReader().read();
    leaving.abort();

    // While they run: the API sees the jobs KEDA would count, the worker the jobs it holds.
    let maxDepth = 0;
    let maxPending = 0;
    let maxInHand = 0;
    await waitFor(async () => {
      const { api, worker } = await scrapeBoth();
      maxDepth = Math.max(maxDepth, api.value('qrart_jobs_queue_depth') ?? 0);
      maxPending = Math.max(maxPending, api.value('qrart_jobs_pending') ?? 0);
      maxInHand = Math.max(maxInHand, worker.value('qrart_worker_jobs_in_hand') ?? 0);
      const done = ['executed', 'failed'];
      return done.includes(await status(first.id)) && done.includes(await status(second.id)) ? true : undefined;
    }, 45_000, 100);
    expect(await status(first.id)).toBe('executed');
    expect(await status(second.id)).toBe('executed');
    expect(maxDepth).toBeGreaterThan(0);
    expect(maxPending, 'the second job waited behind the first').toBeGreaterThan(0);
    expect(maxInHand).toBeGreaterThan(0);

    // Settled: the outbox and the queue are empty again, the webhook was delivered.
    const after = await waitFor(async () => {
      const scraped = await scrapeBoth();
      const { api } = scraped;
      const settled =
        api.value('qrart_outbox_messages') === 0 &&
        api.value('qrart_jobs_queue_depth') === 0 &&
        (api.value('qrart_webhook_deliveries_total', { outcome: 'delivered' }) ?? 0) > (before.api.value('qrart_webhook_deliveries_total', { outcome: 'delivered' }) ?? 0);
      return settled ? scraped : undefined;
    }, 15_000, 100);
    const { api, worker } = after;
    const delta = (now: Scrape, then: Scrape, name: string, labels: Record<string, string> = {}) => (now.value(name, labels) ?? 0) - (then.value(name, labels) ?? 0);
    const countDelta = (now: Scrape, then: Scrape, name: string, labels: Record<string, string> = {}) => now.count(name, labels) - then.count(name, labels);

    // API: requests by route pattern, never by URL.
    expect(delta(api, before.api, 'qrart_http_requests_total', { method: 'POST', route: '/v1/predictions/queue', status: '200' })).toBe(2);
    expect(delta(api, before.api, 'qrart_http_requests_total', { method: 'GET', route: '/v1/predictions/:id', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(delta(api, before.api, 'qrart_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    expect(countDelta(api, before.api, 'qrart_http_request_duration_seconds', { method: 'POST', route: '/v1/predictions/queue' })).toBe(2);
    expect(api.text).not.toMatch(/route="\/(healthz|readyz)"/);
    const events = { method: 'GET', route: '/v1/predictions/:id/events' };
    expect(delta(api, before.api, 'qrart_http_requests_total', { ...events, status: 'aborted' })).toBe(1);
    // A stream that ran to the final record is an answer, but its time is not a latency.
    const ended = await fetch(`${stack.baseUrl}/v1/predictions/${first.id}/events`, { headers: { 'x-api-key': KEY } });
    expect(await ended.text()).toContain('event: prediction');
    const streamsAnswered = await waitFor(async () => {
      const now = await scrapeBoth();
      return delta(now.api, before.api, 'qrart_http_requests_total', { ...events, status: '200' }) === 1 ? now.api : undefined;
    }, 5_000, 50);
    expect(countDelta(streamsAnswered, before.api, 'qrart_http_request_duration_seconds', events)).toBe(0);
    expect(api.text).not.toContain(first.id);
    expect(delta(api, before.api, 'qrart_predictions_created_total', { workflow: WORKFLOW })).toBe(2);
    expect(delta(api, before.api, 'qrart_credits_charged_total', { workflow: WORKFLOW })).toBeCloseTo(first.credits + second.credits, 6);
    expect(delta(api, before.api, 'qrart_credits_refunded_total')).toBe(0);
    for (const event of ['executing', 'executed']) expect(countDelta(api, before.api, 'qrart_event_apply_lag_seconds', { status: event })).toBe(2);
    expect(countDelta(api, before.api, 'qrart_webhook_delivery_duration_seconds', { outcome: 'delivered' })).toBeGreaterThanOrEqual(2);
    expect(api.value('qrart_outbox_oldest_age_seconds')).toBe(0);
    expect(api.value('qrart_webhook_retries_pending')).toBeGreaterThanOrEqual(0);
    expect(api.value('qrart_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(stack.api.db.kind === 'pglite' ? 1 : 0);

    // Worker: the jobs, how long they waited and ran, each stage, each graph role's runs.
    expect(delta(worker, before.worker, 'qrart_worker_jobs_total', { workflow: WORKFLOW, outcome: 'executed' })).toBe(2);
    expect(countDelta(worker, before.worker, 'qrart_worker_queue_wait_seconds', { workflow: WORKFLOW })).toBe(2);
    expect(countDelta(worker, before.worker, 'qrart_worker_job_duration_seconds', { workflow: WORKFLOW })).toBe(2);
    // The second job's wait includes the first job's run.
    expect(delta(worker, before.worker, 'qrart_worker_queue_wait_seconds_sum')).toBeGreaterThan(0);
    for (const stage of ['text_encoder', 'denoise', 'vae', 'nsfw', 'scan_check', 'png_encode', 'upload']) {
      expect(countDelta(worker, before.worker, 'qrart_worker_stage_duration_seconds', { stage }), stage).toBe(2);
    }
    expect(countDelta(worker, before.worker, 'qrart_worker_stage_duration_seconds', { stage: 'repair' }), 'qrRepair=always on the first job').toBe(1);
    // One text encoder, VAE decoder and safety checker run per single-image job, one denoiser run per step.
    for (const role of ['text_encoder', 'vae_decoder', 'safety_checker']) expect(countDelta(worker, before.worker, 'qrart_worker_onnx_run_seconds', { role }), role).toBe(2);
    expect(countDelta(worker, before.worker, 'qrart_worker_onnx_run_seconds', { role: 'denoiser' })).toBe(20);
    expect(delta(worker, before.worker, 'qrart_worker_images_total', { workflow: WORKFLOW })).toBe(2);
    const verdicts = [...(await stack.call('GET', `/v1/predictions/${first.id}`, { key: KEY })).body.data.isScanables, ...(await stack.call('GET', `/v1/predictions/${second.id}`, { key: KEY })).body.data.isScanables];
    for (const verdict of [true, false]) {
      expect(delta(worker, before.worker, 'qrart_worker_scannable_images_total', { scannable: String(verdict) })).toBe(verdicts.filter((v) => v === verdict).length);
    }
    const repaired = delta(worker, before.worker, 'qrart_worker_images_repaired_total');
    expect(repaired).toBeLessThanOrEqual(1);
    // An image is repaired exactly when modules were changed.
    expect(delta(worker, before.worker, 'qrart_worker_repair_modules_changed_total') > 0).toBe(repaired === 1);
    expect(worker.value('qrart_worker_inference_thread_restarts_total')).toBe(0);
    expect(worker.value('qrart_worker_jobs_in_hand')).toBe(0);
  }, 60_000);

  it('answers quickly with what it can while NATS is down', async () => {
    await stack.nats.stop();
    const t0 = performance.now();
    const api = await scrape(apiUrl);
    expect(performance.now() - t0).toBeLessThan(2500);
    // Unknown, so absent (not a made-up 0); the database's and the counters' series are still there.
    expect(api.samples.get('qrart_jobs_queue_depth') ?? []).toEqual([]);
    expect(api.samples.get('qrart_webhook_retries_pending') ?? []).toEqual([]);
    expect(api.value('qrart_outbox_messages')).toBe(0);
    expect(api.value('qrart_predictions_created_total', { workflow: WORKFLOW })).toBe(2);
    expect((await scrape(workerUrl)).value('qrart_worker_jobs_total', { workflow: WORKFLOW, outcome: 'executed' })).toBe(2);
  });
});
