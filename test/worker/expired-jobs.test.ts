/**
 * A job older than PREDICTION_EXPIRY_HOURS (a backlog left by a long worker outage): the API has
 * failed and refunded its prediction (expired) and discards a late result, so the worker drops it
 * unrun instead of spending the device on it ahead of paid jobs. A real nats-server; the runner
 * only counts what it is given.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { CONSUMERS, STREAMS, subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import type { WorkerDaemon } from '../../src/worker/daemon.ts';
import { oneAtATimeDaemon } from '../helpers/daemon.ts';
import { startTestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/service.ts';

const HOUR = 3600_000;

describe('a job older than PREDICTION_EXPIRY_HOURS', () => {
  let nats: Awaited<ReturnType<typeof startTestNats>>;
  let queue: Queue;
  let daemon: WorkerDaemon | undefined;

  beforeAll(async () => {
    nats = await startTestNats();
    queue = await connectQueue(nats.url, 'expired-jobs');
    await ensureTopology(queue.jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3 });
  });
  afterAll(async () => {
    await daemon?.stop();
    await queue?.nc.close();
    await nats?.stop();
  });

  it('is dropped unrun and leaves the stream; a younger one is run', async () => {
    const ran: string[] = [];
    const job = (id: string, ageMs: number) =>
      JSON.stringify({ id, userId: 'u', workflow: 'generate_qr_art_v4', input: {}, imageCount: 1, createdAt: new Date(Date.now() - ageMs).toISOString() });
    await queue.js.publish(subjects.job('generate_qr_art_v4'), job('p-expired', 25 * HOUR));
    await queue.js.publish(subjects.job('generate_qr_art_v4'), job('p-young', 23 * HOUR));
    const counting = {
      name: 'counting',
      run: async (message: { id: string }) => {
        ran.push(message.id);
        return { kind: 'images' as const, images: [] };
      },
    };
    daemon = oneAtATimeDaemon(queue, counting, { expiresAfterMs: 24 * HOUR });
    await waitFor(async () => (ran.length === 1 ? true : undefined));
    await waitFor(async () => ((await queue.jsm.consumers.info(STREAMS.jobs, CONSUMERS.workers)).num_ack_pending === 0 ? true : undefined));
    expect(ran).toEqual(['p-young']);
    expect((await queue.jsm.streams.info(STREAMS.jobs)).state.messages).toBe(0);
    // Nothing said about the dropped one: the API's expiry has failed it already.
    const event = await queue.jsm.streams.getMessage(STREAMS.events, { last_by_subj: subjects.event('p-expired') }).catch(() => null);
    expect(event).toBeNull();
  }, 60_000);
});
