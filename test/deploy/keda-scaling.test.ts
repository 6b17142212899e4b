import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JsMsg } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import type { JobMessage } from '../../src/messages/schemas.ts';
import { CONSUMERS, STREAMS, subjects } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { catalogue } from '../../src/workflows/catalogue.ts';
import {
  Autoscaler,
  JetStreamLagReader,
  kedaDesiredReplicas,
  kedaJszUrl,
  queryJetStreamLag,
  WORKERS_TRIGGER,
  type TickResult,
} from '../../scripts/keda/simulate.ts';
import { startTestNats } from '../helpers/nats.ts';

/**
 * KEDA's decision for the worker Deployment, on the real metric: a nats-server with our topology,
 * jobs published as the outbox relay publishes them, some of them pulled and not acked (in a
 * worker's hand), and the lag read from the monitoring port the way KEDA's nats-jetstream scaler
 * reads it. The policy clock is simulated (one tick = one second), so minutes of cooldown and
 * stabilization cost nothing; the metric at every tick is the server's.
 */

const ACTIVATION = 3;
const MAX_REPLICAS = 6;
const COOLDOWN_S = 10;
const STABILIZATION_S = 5;

function jobMessage(): JobMessage {
  const id = `keda-${randomUUID()}`;
  return { id, userId: 'keda', workflow: 'generate_qr_art_v4s', input: { qrContent: 'https://example.com/keda' }, imageCount: 1, createdAt: new Date().toISOString() };
}

describe('KEDA scaling of the workers on the real JetStream lag', () => {
  let nats: Awaited<ReturnType<typeof startTestNats>>;
  let queue: Queue;
  /** Jobs pulled and not yet acked, as a worker holds them. */
  const held: JsMsg[] = [];

  async function publishJobs(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const job = jobMessage();
      await queue.js.publish(subjects.job(catalogue.generate_qr_art_v4s.subjectToken), JSON.stringify(job), { msgID: job.id });
    }
  }
  async function holdJobs(count: number): Promise<void> {
    const consumer = await queue.js.consumers.get(STREAMS.jobs, CONSUMERS.workers);
    for (let i = 0; i < count; i++) {
      const msg = await consumer.next({ expires: 2000 });
      if (!msg) throw new Error('no job to pull');
      held.push(msg);
    }
  }
  /** Acks the held jobs, then pulls and acks `more` (a worker finishing its hand and the next ones). */
  async function finishJobs(more: number): Promise<void> {
    await Promise.all(held.splice(0).map((msg) => msg.ackAck()));
    await holdJobs(more);
    await Promise.all(held.splice(0).map((msg) => msg.ackAck()));
  }
  const readLag = () => queryJetStreamLag(nats.monitorUrl, WORKERS_TRIGGER);

  beforeAll(async () => {
    nats = await startTestNats();
    queue = await connectQueue(nats.url, 'keda-test');
    await ensureTopology(queue.jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3 });
  });
  afterAll(async () => {
    await queue?.close();
    await nats?.stop();
  });

  it('requests /jsz as KEDA does and counts pending plus ack-pending jobs', async () => {
    expect(kedaJszUrl(nats.monitorUrl, '$G')).toBe(`${nats.monitorUrl}/jsz?acc=%24G&config=true&consumers=true`);
    expect(await readLag()).toMatchObject({ lag: 0, numPending: 0, numAckPending: 0 });

    await publishJobs(5);
    await holdJobs(2);
    expect(await readLag()).toMatchObject({ lag: 5, numPending: 3, numAckPending: 2 });

    await finishJobs(3);
    expect(await readLag()).toMatchObject({ lag: 0, numPending: 0, numAckPending: 0 });
    await expect(queryJetStreamLag(nats.monitorUrl, { ...WORKERS_TRIGGER, consumer: 'nobody' })).rejects.toThrow('consumer "nobody" not found in stream "QRART_JOBS"');
  });

  /** What each lagThreshold decided, compared at the end. */
  const decisions = new Map<number, { atLag4: number; peak: number; afterPartialDrain: number }>();

  for (const lagThreshold of [2, 5]) {
    it(`follows ceil(lag / ${lagThreshold}) up to the maximum, ignores lag at the activation threshold, and scales to zero once drained`, async () => {
      const reader = new JetStreamLagReader(nats.monitorUrl, WORKERS_TRIGGER);
      const autoscaler = new Autoscaler({
        scaledObject: { lagThreshold, activationLagThreshold: ACTIVATION, minReplicaCount: 0, maxReplicaCount: MAX_REPLICAS, pollingIntervalMs: 1000, cooldownPeriodMs: COOLDOWN_S * 1000 },
        hpa: { syncPeriodMs: 1000, downscaleStabilizationMs: STABILIZATION_S * 1000 },
        createdAtMs: 0,
      });
      let clock = 0;
      const tick = async (): Promise<TickResult> => {
        const result = autoscaler.tick((await reader.read()).lag, clock);
        clock += 1000;
        return result;
      };
      const ticks = async (count: number): Promise<TickResult[]> => {
        const results: TickResult[] = [];
        for (let i = 0; i < count; i++) results.push(await tick());
        return results;
      };

      expect(await tick()).toMatchObject({ lag: 0, active: false, replicas: 0 });

      // At the activation threshold the trigger is inactive: nothing starts, however long it waits.
      await publishJobs(ACTIVATION);
      for (const result of await ticks(3)) expect(result).toMatchObject({ lag: ACTIVATION, active: false, replicas: 0 });

      // One more: KEDA activates (0 -> 1); on the HPA's next sync, ceil(lag / lagThreshold).
      await publishJobs(1);
      expect(await tick()).toMatchObject({ lag: 4, active: true, replicas: 1, changes: [{ by: 'keda', from: 0, to: 1 }] });
      const atLag4 = (await tick()).replicas;
      expect(atLag4).toBe(Math.ceil(4 / lagThreshold));

      // Jobs in a worker's hand (pulled, not acked) still count: nothing scales in.
      await holdJobs(4);
      expect(await reader.read()).toMatchObject({ lag: 4, numPending: 0, numAckPending: 4 });
      expect((await tick()).replicas).toBe(atLag4);

      // A pile-up: 20 jobs. The HPA adds at most max(2 x current, 4) per sync, and stops at the maximum.
      await publishJobs(16);
      expect(await reader.read()).toMatchObject({ lag: 20, numPending: 16, numAckPending: 4 });
      const climb = (await ticks(4)).map((r) => r.replicas);
      const peak = Math.min(Math.ceil(20 / lagThreshold), MAX_REPLICAS);
      expect(climb.at(-1)).toBe(peak);
      expect(climb).toEqual(lagThreshold === 2 ? [4, 6, 6, 6] : [4, 4, 4, 4]);
      const pureDecision = kedaDesiredReplicas({ lag: 20, currentReplicas: peak, lagThreshold, activationLagThreshold: ACTIVATION, maxReplicaCount: MAX_REPLICAS });
      expect(pureDecision).toMatchObject({ active: true, replicas: peak });

      // Partly drained to 6: the stabilization window holds the peak, then the HPA follows the lag down.
      await finishJobs(10);
      expect((await reader.read()).lag).toBe(6);
      const held5s = await ticks(STABILIZATION_S);
      for (const result of held5s) expect(result.replicas).toBe(peak);
      const afterWindow = await ticks(2);
      const afterPartialDrain = Math.ceil(6 / lagThreshold);
      expect(afterWindow.at(-1)!.replicas).toBe(afterPartialDrain);
      expect(afterWindow.flatMap((r) => r.changes)).toMatchObject([{ by: 'hpa', from: peak, to: afterPartialDrain }]);

      // Drained: the HPA goes to its floor of one after the window; KEDA takes it to zero after the cooldown.
      await finishJobs(6);
      const lastActiveAt = clock - 1000;
      const drained = await ticks(COOLDOWN_S + 2);
      for (const result of drained) expect(result).toMatchObject({ lag: 0, active: false });
      const zeroAt = drained.find((r) => r.replicas === 0)!;
      expect(zeroAt.changes).toContainEqual(expect.objectContaining({ by: 'keda', to: 0 }));
      expect(zeroAt.atMs - lastActiveAt).toBe((COOLDOWN_S + 1) * 1000); // strictly after the cooldown, on the next poll
      const beforeZero = drained.filter((r) => r.atMs < zeroAt.atMs);
      expect(beforeZero.every((r) => r.replicas >= 1)).toBe(true);
      expect(beforeZero.at(-1)!.replicas).toBe(1);

      // Back at zero, jobs below the activation threshold wait for more: they do not wake a worker.
      await publishJobs(2);
      for (const result of await ticks(3)) expect(result).toMatchObject({ lag: 2, active: false, replicas: 0 });
      await finishJobs(2);

      decisions.set(lagThreshold, { atLag4, peak, afterPartialDrain });
    });
  }

  it('decides differently for lagThreshold 2 and 5', () => {
    expect(decisions.get(2)).toEqual({ atLag4: 2, peak: 6, afterPartialDrain: 3 });
    expect(decisions.get(5)).toEqual({ atLag4: 1, peak: 4, afterPartialDrain: 2 });
  });
});

describe("KEDA's replica arithmetic", () => {
  const base = { lagThreshold: 5, activationLagThreshold: 0, minReplicaCount: 0, maxReplicaCount: 10 };

  it('keeps the count within the 10% tolerance of lag / (current x lagThreshold)', () => {
    expect(kedaDesiredReplicas({ ...base, lag: 21, currentReplicas: 4 })).toMatchObject({ replicas: 4, decidedBy: 'unchanged' }); // 1.05
    expect(kedaDesiredReplicas({ ...base, lag: 23, currentReplicas: 4 })).toMatchObject({ replicas: 5, metricReplicas: 5, decidedBy: 'hpa' }); // 1.15
    expect(kedaDesiredReplicas({ ...base, lag: 19, currentReplicas: 4 })).toMatchObject({ replicas: 4 }); // 0.95
    expect(kedaDesiredReplicas({ ...base, lag: 17, currentReplicas: 4 })).toMatchObject({ replicas: 4, metricReplicas: 4 }); // 0.85: ceil(3.4) = 4
    expect(kedaDesiredReplicas({ ...base, lag: 14, currentReplicas: 4 })).toMatchObject({ replicas: 3 }); // 0.7
  });

  it('leaves zero only through activation, to max(minReplicaCount, 1)', () => {
    expect(kedaDesiredReplicas({ ...base, lag: 100, currentReplicas: 0 })).toMatchObject({ replicas: 1, decidedBy: 'keda-activation' });
    expect(kedaDesiredReplicas({ ...base, minReplicaCount: 3, lag: 100, currentReplicas: 0 })).toMatchObject({ replicas: 3, decidedBy: 'keda-activation' });
    expect(kedaDesiredReplicas({ ...base, activationLagThreshold: 5, lag: 5, currentReplicas: 0 })).toMatchObject({ active: false, replicas: 0 });
  });

  it('bounds a scale-up by max(2 x current, 4) and maxReplicaCount, a scale-down by the HPA floor of one', () => {
    expect(kedaDesiredReplicas({ ...base, lag: 100, currentReplicas: 1 })).toMatchObject({ metricReplicas: 20, replicas: 4 });
    expect(kedaDesiredReplicas({ ...base, lag: 100, currentReplicas: 4 })).toMatchObject({ replicas: 8 });
    expect(kedaDesiredReplicas({ ...base, lag: 100, currentReplicas: 8 })).toMatchObject({ replicas: 10 });
    expect(kedaDesiredReplicas({ ...base, minReplicaCount: 2, lag: 0, currentReplicas: 8 })).toMatchObject({ active: false, replicas: 2 });
    expect(kedaDesiredReplicas({ ...base, lag: 0, currentReplicas: 8 })).toMatchObject({ replicas: 0, decidedBy: 'keda-deactivation' });
  });

  it('with the defaults (poll 30 s, sync 15 s), holds a scale-down for the 300 s window and scales to zero after the 300 s cooldown', () => {
    const autoscaler = new Autoscaler({ scaledObject: { lagThreshold: 10 }, createdAtMs: 0 });
    /** Every poll and sync due up to `untilMs`, on a constant lag. */
    const advance = (lag: number, untilMs: number): TickResult[] => {
      const results: TickResult[] = [];
      while (autoscaler.nextDueAtMs() <= untilMs) results.push(autoscaler.tick(lag, autoscaler.nextDueAtMs()));
      return results;
    };
    // KEDA activates at its first poll; the HPA doubles (at least +4) every 15 s sync up to ceil(95 / 10).
    expect(advance(95, 45_000).map((r) => [r.atMs, r.replicas])).toEqual([[0, 1], [15_000, 4], [30_000, 8], [45_000, 10]]);
    // Drained at 60 s. The last active poll was at 30 s; the last recommendation of 10 at 45 s.
    const held = advance(0, 345_000);
    expect(held.every((r) => r.replicas === 10)).toBe(true);
    expect(held.find((r) => r.atMs === 330_000)).toMatchObject({ active: false, replicas: 10 }); // the cooldown must be past, not reached
    expect(advance(0, 360_000).at(-1)).toMatchObject({
      replicas: 0,
      changes: [expect.objectContaining({ by: 'hpa', from: 10, to: 1 }), expect.objectContaining({ by: 'keda', from: 1, to: 0 })],
    });
  });
});

describe('an HPA behavior like deploy/base/worker-scaledobject.yaml (up: 100% or 4 pods per 60 s; down: 600 s window, 1 pod per 300 s)', () => {
  const behavior = {
    scaleUp: {
      stabilizationWindowSeconds: 0,
      selectPolicy: 'Max' as const,
      policies: [
        { type: 'Percent' as const, value: 100, periodSeconds: 60 },
        { type: 'Pods' as const, value: 4, periodSeconds: 60 },
      ],
    },
    scaleDown: { stabilizationWindowSeconds: 600, selectPolicy: 'Min' as const, policies: [{ type: 'Pods' as const, value: 1, periodSeconds: 300 }] },
  };
  /** Polls and syncs every 15 s on the lag the function gives for each time; the replica count at every change. */
  function run(autoscaler: Autoscaler, lagAt: (ms: number) => number, untilMs: number): [number, number][] {
    const changes: [number, number][] = [];
    while (autoscaler.nextDueAtMs() <= untilMs) {
      const at = autoscaler.nextDueAtMs();
      const tick = autoscaler.tick(lagAt(at), at);
      if (tick.changes.length > 0) changes.push([at / 1000, tick.replicas]);
    }
    return changes;
  }
  const lag = (ms: number) => (ms < 120_000 ? 40 : 0); // 40 jobs for two minutes, then none

  it('with minReplicaCount 1: +4 pods, then doubling, per minute; after the queue empties, 10 minutes at the peak, then one pod per 5 minutes', () => {
    const autoscaler = new Autoscaler({
      scaledObject: { lagThreshold: 2, minReplicaCount: 1, maxReplicaCount: 8, pollingIntervalMs: 15_000 },
      hpa: { behavior },
      initialReplicas: 1,
      createdAtMs: 0,
    });
    expect(run(autoscaler, lag, 1_400_000)).toEqual([
      [0, 5], // from 1: max(1 + 4, 2 x 1) within the minute
      [60, 8], // the next minute: max(5 + 4, 2 x 5), capped at 8
      [705, 7], // the last recommendation of 20 was at 105 s: 600 s later, one pod
      [1005, 6],
      [1305, 5],
    ]);
  });

  it('with the base behavior, minReplicaCount 0 and cooldown 300 s (the table in docs/scaling.md): KEDA takes every pod at once, cooldownPeriod after the last active poll', () => {
    const autoscaler = new Autoscaler({
      scaledObject: { lagThreshold: 2, minReplicaCount: 0, maxReplicaCount: 8, pollingIntervalMs: 15_000, cooldownPeriodMs: 300_000 },
      hpa: { behavior },
      createdAtMs: 0,
    });
    // KEDA wakes it (0 -> 1) at its first poll; the HPA starts from 1 on its next sync.
    expect(run(autoscaler, lag, 1_000_000)).toEqual([
      [0, 1],
      [15, 5],
      [75, 8], // a minute after the first scale-up: max(5 + 4, 2 x 5), capped at 8
      [420, 0], // last active poll at 105 s; 105 + 300 is not yet past at 405 s
    ]);
  });
});

describe('the consumer leader on a JetStream cluster', () => {
  let server: Server;
  let port: number;
  const requests: string[] = [];

  beforeAll(async () => {
    // Two nodes told apart by the Host header (127.0.0.1 and localhost); the consumer's leader is n2.
    server = createServer((request, response) => {
      const host = (request.headers.host ?? '').split(':')[0]!;
      const node = host === 'localhost' ? 'n2' : 'n1';
      requests.push(`${node} ${request.url}`);
      response.setHeader('content-type', 'application/json');
      if (request.url === '/varz') {
        response.end(JSON.stringify({ server_name: node, connect_urls: ['127.0.0.1:4222', 'localhost:4222'] }));
        return;
      }
      const consumer = { name: CONSUMERS.workers, num_pending: node === 'n2' ? 40 : 7, num_ack_pending: 2, cluster: { leader: 'n2' } };
      response.end(
        JSON.stringify({ meta_cluster: { cluster_size: 3 }, account_details: [{ name: '$G', id: '$G', stream_detail: [{ name: STREAMS.jobs, consumer_detail: [consumer] }] }] }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("reads the leader's figures, and the leader's URL alone on the next poll", async () => {
    const reader = new JetStreamLagReader(`http://127.0.0.1:${port}`, WORKERS_TRIGGER);
    expect(await reader.read()).toMatchObject({ lag: 42, url: `http://localhost:${port}/jsz?acc=%24G&config=true&consumers=true` });
    expect(requests.splice(0)).toEqual(['n1 /jsz?acc=%24G&config=true&consumers=true', 'n1 /varz', 'n1 /varz', 'n1 /jsz?acc=%24G&config=true&consumers=true', 'n2 /varz', 'n2 /jsz?acc=%24G&config=true&consumers=true']);
    expect((await reader.read()).lag).toBe(42);
    expect(requests.splice(0)).toEqual(['n2 /jsz?acc=%24G&config=true&consumers=true']);
  });
});
