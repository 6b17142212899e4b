import type { Logger } from 'pino';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { startWorkerDaemon, type WorkerDaemon } from '../../src/worker/daemon.ts';
import type { JobRunner } from '../../src/worker/runner.ts';

export interface FleetOptions {
  readonly natsUrl: string;
  readonly logger: Logger;
  /** One runner per replica (each has its own device). */
  readonly newRunner: () => JobRunner;
  /** WORKER_PREFETCH and WORKER_CONCURRENCY, as worker-service.ts applies them. */
  readonly prefetch: number;
  readonly concurrency: number;
  readonly ackWaitMs: number;
  /** The jobs consumer's MaxDeliver (JOB_MAX_DELIVER). */
  readonly maxDeliver: number;
  /** Scheduling, image start, connecting: from the replica count going up to the worker pulling. */
  readonly podStartMs: number;
}

type PodState = 'starting' | 'running' | 'terminating';

const IDLE_SAMPLE_MS = 100;

interface Pod {
  readonly name: string;
  state: PodState;
  queue?: Queue;
  daemon?: WorkerDaemon;
  /** Settles when the pod is pulling (or gave up starting because it was terminated first). */
  started: Promise<void>;
}

/**
 * Bench only: a Deployment of worker replicas in this process. Each replica is what a worker pod
 * runs (its own NATS connection, the real worker daemon, WORKER_PREFETCH / WORKER_CONCURRENCY),
 * minus the process. scaleTo() returns at once, like writing spec.replicas; replicas start after
 * podStartMs, and a removed one stops the way a pod does on SIGTERM: daemon.stop() lets the jobs
 * in its hand finish and ack before the connection closes.
 */
export class InProcessFleet {
  private readonly pods: Pod[] = [];
  private readonly stopping = new Set<Promise<void>>();
  private sequence = 0;
  /** Replica-seconds spent so far (starting, running or terminating): the bill. */
  private podMs = 0;
  private lastAccountedAt = Date.now();
  /** Replica-seconds a running replica spent with no job in hand (sampled). */
  private idleMs = 0;
  private readonly sampler: NodeJS.Timeout;

  constructor(private readonly options: FleetOptions) {
    this.sampler = setInterval(() => {
      for (const pod of this.pods) if (pod.state === 'running' && pod.daemon?.inHand() === 0) this.idleMs += IDLE_SAMPLE_MS;
    }, IDLE_SAMPLE_MS);
    this.sampler.unref();
  }

  /** Replicas not terminating (what the Deployment counts toward spec.replicas). */
  get replicas(): number {
    return this.pods.filter((pod) => pod.state !== 'terminating').length;
  }

  get running(): number {
    return this.pods.filter((pod) => pod.state === 'running').length;
  }

  /** Replica-seconds consumed so far. */
  podSeconds(): number {
    this.account();
    return this.podMs / 1000;
  }

  /** Replica-seconds running replicas spent holding no job: pulling from a queue that others emptied. */
  idleSeconds(): number {
    return this.idleMs / 1000;
  }

  scaleTo(replicas: number): void {
    this.account();
    while (this.replicas < replicas) this.pods.push(this.startPod());
    // Newest first, as a ReplicaSet prefers to delete the pods that started last.
    const live = () => this.pods.filter((pod) => pod.state !== 'terminating');
    while (this.replicas > replicas) this.terminate(live().at(-1)!);
  }

  /** Stops every replica and waits for the last job in hand to be acked. */
  async stopAll(): Promise<void> {
    this.scaleTo(0);
    while (this.stopping.size > 0) await Promise.all([...this.stopping]);
    clearInterval(this.sampler);
  }

  private startPod(): Pod {
    const pod: Pod = { name: `worker-${++this.sequence}`, state: 'starting', started: Promise.resolve() };
    pod.started = (async () => {
      await new Promise((resolve) => setTimeout(resolve, this.options.podStartMs));
      if (pod.state === 'terminating') return;
      pod.queue = await connectQueue(this.options.natsUrl, pod.name);
      const { prefetch, concurrency, ackWaitMs, maxDeliver } = this.options;
      pod.daemon = startWorkerDaemon({
        queue: pod.queue,
        runner: this.options.newRunner(),
        logger: this.options.logger,
        prefetch,
        maxInHand: Math.max(concurrency, 1 + prefetch),
        workerId: pod.name,
        heartbeatMs: Math.max(1000, Math.floor(ackWaitMs / 3)),
        maxDeliver,
      });
      if (pod.state === 'starting') pod.state = 'running';
    })();
    return pod;
  }

  private terminate(pod: Pod): void {
    pod.state = 'terminating';
    const stopped = (async () => {
      await pod.started;
      await pod.daemon?.stop();
      await pod.queue?.close();
      this.account();
      this.pods.splice(this.pods.indexOf(pod), 1);
    })();
    this.stopping.add(stopped);
    void stopped.finally(() => this.stopping.delete(stopped));
  }

  private account(): void {
    const now = Date.now();
    this.podMs += this.pods.length * (now - this.lastAccountedAt);
    this.lastAccountedAt = now;
  }
}
