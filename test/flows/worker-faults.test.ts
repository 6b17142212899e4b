import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONSUMERS, STREAMS } from '../../src/queue/subjects.ts';
import { balanceOf } from '../../src/store/accounts.ts';
import { isPulling, predictionsOf, startFaultStack, waitForStatus, type FaultStack, type WorkerProcess } from '../helpers/fault-stack.ts';
import { sleep, startWebhookReceiver, type WebhookReceiver } from '../helpers/flows.ts';
import { dedupeWebhooks, fetchOutputImage, parseWebhooks, statusEventsOf } from '../helpers/outputs.ts';
import { waitFor } from '../helpers/service.ts';
import { writeManifestVariant, type ManifestJson } from '../../scripts/demo-models/manifest-variants.ts';

/**
 * Issue 4's fault drills, through the real stack: the API in this process, a real nats-server
 * (JetStream on disk) and `qr-art worker` child processes running the diffusion pipeline on
 * the demo graphs. What must hold from the client's side in every drill: the prediction ends
 * executed exactly once (one record, one charge, no refund, images it can fetch) and the
 * webhooks it receives deduplicate to one per transition.
 */

const KEY = 'key-faults-0123456789abcdef0123456789ab';
const USER = 'fay';
const MODELS_DIR = path.resolve(import.meta.dirname, '../../models');
/** Short enough that a dead worker's job comes back quickly; heartbeats run every ACK_WAIT/3. */
const ACK_WAIT_MS = 5000;

/** A v5 job long enough to be caught mid-generation on CPU (40 steps x 2 images: 10-20 s here). */
const longJob = (label: string, webhook?: string) => ({
  workflow: 'generate_qr_art_v5',
  prompt: `a lighthouse on a cliff, ${label}`,
  qrContent: `https://example.com/faults/${label}`,
  steps: 40,
  batchSize: 2,
  seed: 4242,
  ...(webhook ? { webhook } : {}),
});

describe('worker faults (real nats-server, worker child processes, diffusion on the demo graphs)', () => {
  let stack: FaultStack;
  let receiver: WebhookReceiver;
  let tmp: string;
  const spawned: WorkerProcess[] = [];

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    tmp = await mkdtemp(path.join(tmpdir(), 'qrart-faults-'));
    stack = await startFaultStack({
      env: { API_KEYS: `${USER}:${KEY}:1000`, JOB_ACK_WAIT_MS: String(ACK_WAIT_MS), JOB_MAX_DELIVER: '5', WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800' },
    });
  });
  afterEach(async () => {
    // A drill leaves no worker behind for the next one.
    await Promise.all(spawned.splice(0).map((worker) => worker.stop(5000)));
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const worker = (name: string, env?: Record<string, string>) => {
    const w = stack.spawnWorker(name, env);
    spawned.push(w);
    return w;
  };

  const create = (body: Record<string, unknown>) => predictionsOf(stack, KEY).create(body);
  const get = (id: string) => predictionsOf(stack, KEY).get(id);
  const ledgerOf = (id: string) => predictionsOf(stack, KEY).ledgerOf(id);

  /** Everything "executed exactly once, charged once" means to the client and to the books. */
  async function expectExecutedOnce(id: string, credits: number, batchSize: number) {
    const done = await get(id);
    expect(done).toMatchObject({ id, status: 'executed', refunded: false, error: null });
    expect(done.completedAt).not.toBeNull();
    expect(done.output.images).toHaveLength(batchSize);
    expect(done.isScanables).toHaveLength(batchSize);
    for (const url of done.output.images as string[]) {
      const image = await fetchOutputImage(stack.baseUrl, url);
      expect(image).toMatchObject({ status: 200, contentType: 'image/png', format: 'png', width: 768, height: 768 });
    }
    // One record for the prediction in the client's list, one charge and no refund in the ledger.
    const listed = (await stack.call('GET', '/v1/predictions?limit=100', { key: KEY })).body.data;
    expect(listed.docs.filter((doc: { id: string }) => doc.id === id)).toHaveLength(1);
    expect(await ledgerOf(id)).toEqual([{ reason: 'charge', cents: -Math.round(credits * 100) }]);
    return done;
  }

  /**
   * The deliveries at `path`, deduplicated by webhook-id as a receiver would: exactly one
   * executing and one executed (equal to the final record), whatever was retried or redone.
   */
  async function expectWebhooksOncePerTransition(hookPath: string, final: unknown) {
    const arrived = (status: string) => parseWebhooks(receiver.at(hookPath)).some((hook) => hook.status === status);
    await waitFor(async () => (arrived('executed') && arrived('executing') ? true : undefined), 30_000);
    await sleep(1500); // anything still on its way (a retry, a second executed) arrives within this
    const seen = parseWebhooks(receiver.at(hookPath));
    const unique = dedupeWebhooks(seen);
    expect(unique.map((hook) => hook.status).sort()).toEqual(['executed', 'executing']);
    expect(unique.find((hook) => hook.status === 'executed')!.data).toEqual(final);
    return { raw: seen.length, unique: unique.length };
  }

  it('a worker killed with SIGKILL mid-generation: the job is redelivered to a new worker and executes exactly once, charged once', async () => {
    const first = worker('worker-killed');
    await first.waitForRecord(isPulling, 90_000);

    const before = await balanceOf(stack.api.db, USER);
    const hookPath = '/hooks/kill';
    const created = await create(longJob('kill', `${receiver.url}${hookPath}`));
    const cost = Math.round(created.credits * 100);
    expect(await balanceOf(stack.api.db, USER)).toBe(before - cost);

    // Mid-generation: the worker has announced the job and is some steps into it.
    const step = await first.waitForRecord((r) => r.msg === 'generation step' && r.predictionId === created.id && r.step >= 3, 90_000);
    expect(step.step).toBeLessThan(step.total);
    await waitForStatus(stack, KEY, created.id, ['executing'], 30_000);
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(first.records().some((r) => r.msg === 'job done')).toBe(false);

    // Nothing was decided for the client while no worker holds the job.
    const orphaned = await get(created.id);
    expect(orphaned.status).toBe('executing');
    expect(orphaned.completedAt).toBeNull();

    const second = worker('worker-after-kill');
    await waitForStatus(stack, KEY, created.id, ['executed', 'failed'], 180_000);
    const done = await expectExecutedOnce(created.id, created.credits, 2);
    expect(await balanceOf(stack.api.db, USER)).toBe(before - cost);

    // The new worker ran it as a redelivery (the server's count, not a new job).
    const finished = await second.waitForRecord((r) => r.msg === 'job done' && r.predictionId === created.id, 10_000);
    expect(finished.delivery).toBeGreaterThanOrEqual(2);
    expect(finished.outcome).toBe('images');

    // In the events stream: one executing (the rerun's copy was dropped as a duplicate) and one executed.
    const events = await statusEventsOf(stack.api.queue.jsm, created.id);
    expect(events.map((event) => event.status)).toEqual(['executing', 'executed']);
    expect(events[1]!.workerId).toBe('worker-after-kill');

    await expectWebhooksOncePerTransition(hookPath, done);

    // The job left the work queue (acked), nothing pending for any worker.
    const consumer = await stack.api.queue.jsm.consumers.info(STREAMS.jobs, CONSUMERS.workers);
    expect(consumer.num_pending + consumer.num_ack_pending).toBe(0);
    expect((await get(created.id)).status).toBe('executed');
  }, 300_000);

  it('a NATS restart while one job is mid-generation and another is created: both execute exactly once, nothing lost or charged twice', async () => {
    const running = worker('worker-nats');
    await running.waitForRecord(isPulling, 90_000);
    const before = await balanceOf(stack.api.db, USER);

    const hookPath = '/hooks/nats-running';
    const inFlight = await create(longJob('nats-running', `${receiver.url}${hookPath}`));
    await running.waitForRecord((r) => r.msg === 'generation step' && r.predictionId === inFlight.id && r.step >= 3, 90_000);
    await waitForStatus(stack, KEY, inFlight.id, ['executing'], 30_000);

    await stack.stopNats();
    // While NATS is down: the API still takes a prediction (it waits in the outbox) and the
    // worker keeps generating the one in hand, with nowhere to put the result yet.
    const whileDown = await create({ workflow: 'generate_qr_art_v5s', prompt: 'a harbour at dawn', qrContent: 'https://example.com/faults/nats-down', steps: 4, seed: 77, webhook: `${receiver.url}/hooks/nats-queued` });
    expect((await get(whileDown.id)).status).toBe('queued');
    // Keep NATS down until the worker has finished generating and failed to store and announce
    // the result (the attempt is handed back), or for a generous while if it keeps waiting.
    // It cannot finish the job meanwhile: 'job done' needs the executed event's PubAck.
    const outcome = await running
      .waitForRecord((r) => r.msg === 'job attempt failed; handing it back' && r.predictionId === inFlight.id, 150_000)
      .then((r) => `the attempt failed (${r.err?.message ?? 'no message'}) and was handed back`)
      .catch(() => 'no failed attempt within 150 s');
    expect(running.records().some((r) => r.msg === 'job done' && r.predictionId === inFlight.id)).toBe(false);
    await stack.startNats();

    await waitForStatus(stack, KEY, inFlight.id, ['executed', 'failed'], 240_000);
    await waitForStatus(stack, KEY, whileDown.id, ['executed', 'failed'], 240_000);
    const doneRunning = await expectExecutedOnce(inFlight.id, inFlight.credits, 2);
    const doneQueued = await expectExecutedOnce(whileDown.id, whileDown.credits, 1);
    expect(await balanceOf(stack.api.db, USER)).toBe(before - Math.round(inFlight.credits * 100) - Math.round(whileDown.credits * 100));

    const hooks = await expectWebhooksOncePerTransition(hookPath, doneRunning);
    await expectWebhooksOncePerTransition('/hooks/nats-queued', doneQueued);

    // The worker survived the outage (reconnected, no restart needed) and is still pulling.
    expect(running.isRunning()).toBe(true);
    const events = await statusEventsOf(stack.api.queue.jsm, inFlight.id);
    const executedEvents = events.filter((event) => event.status === 'executed');
    expect(executedEvents.length).toBeGreaterThanOrEqual(1);
    // The record shows the images of the first executed event the stream kept.
    expect(doneRunning.output.images.map((url: string) => new URL(url).pathname.split('/').pop())).toEqual(executedEvents[0]!.images);
    console.info(
      `[nats restart] result while NATS was down: ${outcome}; job attempts: ${running.records().filter((r) => r.msg === 'job done' || r.msg === 'job attempt failed; handing it back').map((r) => `${r.predictionId === inFlight.id ? 'in-flight' : 'queued'}#${r.delivery}:${r.msg}`).join(', ')}; ` +
        `events kept for the in-flight job: ${events.map((event) => `${event.status}(${event.workerId})`).join(' ')}; webhooks at its receiver: ${hooks.raw} raw, ${hooks.unique} after dedup`,
    );
    const consumer = await stack.api.queue.jsm.consumers.info(STREAMS.jobs, CONSUMERS.workers);
    expect(consumer.num_pending + consumer.num_ack_pending).toBe(0);
  }, 420_000);

  describe('a worker started with an invalid model manifest', () => {
    const manifestVariant = (name: string, edit: (manifest: ManifestJson) => void): Promise<string> => writeManifestVariant(tmp, name, edit);

    it('exits non-zero at start naming the file and the problem, and the queued prediction waits for a good worker', async () => {
      const before = await balanceOf(stack.api.db, USER);
      const created = await create({ workflow: 'generate_qr_art_v5s', prompt: 'a paper boat', qrContent: 'https://example.com/faults/manifest', steps: 4, seed: 9 });

      const missingFile = path.join(tmp, 'weights', 'denoiser', 'model.onnx');
      const missing = await manifestVariant('missing-denoiser', (m) => (m.models['demo-sd15'].graphs.denoiser.path = missingFile));
      const vaeAsDenoiser = path.join(MODELS_DIR, 'demo', 'vae_decoder', 'model.onnx');
      // A real ONNX graph, but the VAE decoder's: its inputs do not fit the denoiser role.
      const swapped = await manifestVariant('vae-as-denoiser', (m) => (m.models['demo-sd15'].graphs.denoiser.path = vaeAsDenoiser));
      // Copy of a real graph under another name: the message must name the file the manifest names.
      const renamed = path.join(tmp, 'renamed-vae.onnx');
      await copyFile(vaeAsDenoiser, renamed);
      const renamedManifest = await manifestVariant('renamed-vae-as-denoiser', (m) => (m.models['demo-sd15'].graphs.denoiser.path = renamed));

      // Messages show a path relative to the working directory when it is inside it (the worker runs in this one).
      const shown = (file: string) => (file.startsWith(`${process.cwd()}${path.sep}`) ? path.relative(process.cwd(), file) : file);
      const cases = [
        { manifest: missing, says: [`${shown(missingFile)}: file not found (named in ${shown(missing)})`] },
        { manifest: swapped, says: [`${shown(vaeAsDenoiser)}: the denoiser role needs an input 'sample' but the graph's inputs are 'latent_sample'`] },
        { manifest: renamedManifest, says: [`${shown(renamed)}: the denoiser role needs an input 'sample'`] },
      ];
      for (const { manifest, says } of cases) {
        const bad = worker(`worker-bad-${path.basename(manifest, '.json')}`, { MODELS_MANIFEST: manifest });
        const exit = await Promise.race([bad.exited, sleep(90_000).then(() => 'still running' as const)]);
        expect(exit, bad.output()).toEqual({ code: 1, signal: null });
        for (const text of says) expect(bad.stderr()).toContain(text);
        expect(bad.records().some(isPulling)).toBe(false);
      }
      // A good manifest but a health port that is taken: the probes could never pass, so it exits
      // before its first pull, without taking the job it would have to finish first.
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, resolve));
      try {
        const port = String((taken.address() as AddressInfo).port);
        const noProbes = worker('worker-health-port-taken', { WORKER_METRICS_PORT: port });
        const exit = await Promise.race([noProbes.exited, sleep(90_000).then(() => 'still running' as const)]);
        expect(exit, noProbes.output()).toEqual({ code: 1, signal: null });
        expect(noProbes.stderr()).toContain(`port ${port} is already in use`);
        expect(noProbes.records().some(isPulling)).toBe(false);
      } finally {
        taken.close();
      }

      // Still queued, still in the work queue, never handed to the bad workers.
      expect((await get(created.id)).status).toBe('queued');
      const consumer = await stack.api.queue.jsm.consumers.info(STREAMS.jobs, CONSUMERS.workers);
      expect(consumer.num_pending).toBe(1);
      expect(consumer.num_ack_pending).toBe(0);

      const good = worker('worker-good-manifest');
      await waitForStatus(stack, KEY, created.id, ['executed', 'failed'], 120_000);
      await expectExecutedOnce(created.id, created.credits, 1);
      expect(await balanceOf(stack.api.db, USER)).toBe(before - Math.round(created.credits * 100));
      const finished = await good.waitForRecord((r) => r.msg === 'job done' && r.predictionId === created.id, 10_000);
      expect(finished.delivery).toBe(1);
    }, 300_000);
  });
});
