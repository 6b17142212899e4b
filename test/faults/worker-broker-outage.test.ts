/**
 * A worker daemon through a NATS restart (a failover, a rolling update of the NATS servers):
 * it says it is not ready while disconnected, and a job that fails on its input while the
 * failure cannot be published is handed back, not lost, and does not take the process down.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { STREAMS, subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { freePort } from '../../src/runtime/local-nats.ts';
import type { WorkerDaemon } from '../../src/worker/daemon.ts';
import { JobInputError } from '../../src/worker/runner.ts';
import { oneAtATimeDaemon } from '../helpers/daemon.ts';
import { natsOnFixedPort } from '../helpers/nats.ts';
import { waitFor } from '../helpers/service.ts';

const PREDICTION = 'p-broker-outage';

/** A run the test holds: `pulled` resolves when the first run starts, which then waits for `release()`. */
function heldFirstRun() {
  let pulled!: () => void;
  const firstPulled = new Promise<void>((resolve) => (pulled = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const hold = async (run: number): Promise<void> => {
    if (run !== 1) return;
    pulled();
    await released;
  };
  return { firstPulled, release, hold };
}

describe('a worker through a NATS restart', () => {
  let storeDir: string;
  let nats: ReturnType<typeof natsOnFixedPort>;
  let queue: Queue;
  let daemon: WorkerDaemon | undefined;

  beforeAll(async () => {
    storeDir = await mkdtemp(path.join(tmpdir(), 'qrart-nats-'));
    nats = natsOnFixedPort(await freePort(), storeDir);
    await nats.start();
    queue = await connectQueue(nats.url, 'worker-broker-outage');
    await ensureTopology(queue.jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3 });
  });
  afterAll(async () => {
    await daemon?.stop();
    await queue?.nc.close();
    await nats?.stop();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('is not ready while disconnected, and hands back a job whose input failure it cannot publish; the next run publishes it', async () => {
    let runs = 0;
    const { firstPulled, release, hold } = heldFirstRun();
    daemon = oneAtATimeDaemon(queue, {
      name: 'input-fails',
      run: async () => {
        await hold(++runs);
        throw new JobInputError('the generation does not fit in the device memory', 'out_of_memory');
      },
    });
    await queue.js.publish(
      subjects.job('generate_qr_art_v4'),
      JSON.stringify({ id: PREDICTION, userId: 'u', workflow: 'generate_qr_art_v4', input: {}, imageCount: 1, createdAt: new Date().toISOString() }),
    );
    await firstPulled;
    expect(daemon.ready()).toBe(true);

    await nats.stop();
    await waitFor(async () => (queue.connected() ? undefined : true));
    expect(daemon.ready()).toBe(false);
    // The run fails on its input now: its failed event cannot be published.
    release();
    await new Promise((resolve) => setTimeout(resolve, 6000));

    await nats.start();
    await waitFor(async () => (daemon!.ready() ? true : undefined), 20_000);
    // Handed back, run again, and this time the failure is told.
    const failed = await waitFor(async () => {
      const last = await queue.jsm.streams.getMessage(STREAMS.events, { last_by_subj: subjects.event(PREDICTION) }).catch(() => null);
      const event = last ? (JSON.parse(new TextDecoder().decode(last.data)) as { status: string; error?: { code: string } }) : undefined;
      return event?.status === 'failed' ? event : undefined;
    }, 30_000);
    expect(failed.error?.code).toBe('out_of_memory');
    expect(runs).toBe(2);
  }, 90_000);

  it('delivers images made while NATS is away once it is back: the job is not handed back and made again', async () => {
    await daemon?.stop();
    const id = 'p-made-while-away';
    let runs = 0;
    const { firstPulled, release, hold } = heldFirstRun();
    daemon = oneAtATimeDaemon(queue, {
      name: 'images-while-away',
      run: async () => {
        await hold(++runs);
        return { kind: 'images', images: [{ data: new Uint8Array([1, 2, 3, runs]), extension: 'png', isScannable: true, scanRobustness: 1 }] };
      },
    });
    await queue.js.publish(
      subjects.job('generate_qr_art_v4'),
      JSON.stringify({ id, userId: 'u', workflow: 'generate_qr_art_v4', input: {}, imageCount: 1, createdAt: new Date().toISOString() }),
    );
    await firstPulled;
    await nats.stop();
    await waitFor(async () => (queue.connected() ? undefined : true));
    // The images are made now; their upload and the executed event cannot go out.
    release();
    await new Promise((resolve) => setTimeout(resolve, 6000));
    await nats.start();
    const executed = await waitFor(async () => {
      const last = await queue.jsm.streams.getMessage(STREAMS.events, { last_by_subj: subjects.event(id) }).catch(() => null);
      const event = last ? (JSON.parse(new TextDecoder().decode(last.data)) as { status: string; images?: string[] }) : undefined;
      return event?.status === 'executed' ? event : undefined;
    }, 30_000);
    expect(runs).toBe(1);
    expect(executed.images).toHaveLength(1);
    expect([...(await queue.images.getBlob(executed.images![0]!))!]).toEqual([1, 2, 3, 1]);
  }, 90_000);

  it('with no job in hand, stops within seconds while NATS is away (its pending pull is not waited for)', async () => {
    await daemon?.stop();
    daemon = oneAtATimeDaemon(queue, { name: 'never-called', run: async () => ({ kind: 'images', images: [] }) });
    await waitFor(async () => (daemon!.ready() ? true : undefined));
    await nats.stop();
    await waitFor(async () => (queue.connected() ? undefined : true));
    const stopped = await Promise.race([daemon.stop().then(() => 'stopped'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000))]);
    expect(stopped).toBe('stopped');
    daemon = undefined;
    await nats.start();
  }, 60_000);
});
