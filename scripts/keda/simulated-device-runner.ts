import { setTimeout as sleep } from 'node:timers/promises';
import type { JobMessage } from '../../src/messages/schemas.ts';
import type { JobRunner, RunHooks, RunOutcome } from '../../src/worker/runner.ts';

/**
 * Bench only: a replica whose device takes a fixed time per job. The model-free control-image
 * runner does the job's real CPU work (control image, PNG, scan check) in milliseconds; in front of
 * it this runner holds a one-job-at-a-time "device" for `deviceMs`, so that a replica's throughput
 * is a GPU worker's (one generation at a time) and adding replicas is what drains the queue faster.
 * The daemon's prefetched jobs wait for the device here, as they wait for the inference thread.
 */
export class SimulatedDeviceRunner implements JobRunner {
  readonly name: string;
  private device: Promise<void> = Promise.resolve();

  constructor(
    private readonly inner: JobRunner,
    private readonly deviceMs: number,
  ) {
    this.name = `${inner.name}+device(${deviceMs} ms)`;
  }

  async run(job: JobMessage, hooks: RunHooks): Promise<RunOutcome> {
    const previous = this.device;
    let release!: () => void;
    this.device = new Promise<void>((resolve) => (release = resolve));
    try {
      await previous;
      hooks.onStart?.();
      await sleep(this.deviceMs, undefined, { signal: hooks.signal });
    } finally {
      release();
    }
    hooks.onDeviceDone?.();
    // `executing` is announced already; the rest is CPU work, off the device.
    return this.inner.run(job, { signal: hooks.signal });
  }
}

/** Bench only: counts every run of every job, to tell a lost job from one run twice. */
export class ExecutionLedger {
  private readonly started = new Map<string, number>();
  private readonly completed = new Map<string, number>();

  wrap(inner: JobRunner): JobRunner {
    return {
      name: inner.name,
      run: async (job, hooks) => {
        this.started.set(job.id, (this.started.get(job.id) ?? 0) + 1);
        const outcome = await inner.run(job, hooks);
        this.completed.set(job.id, (this.completed.get(job.id) ?? 0) + 1);
        return outcome;
      },
    };
  }

  /** Jobs among `ids` never completed, and jobs completed more than once. */
  audit(ids: readonly string[]): { lost: number; ranTwice: number; runsStarted: number; runsCompleted: number } {
    const sum = (counts: Map<string, number>) => [...counts.values()].reduce((total, n) => total + n, 0);
    return {
      lost: ids.filter((id) => !this.completed.has(id)).length,
      ranTwice: ids.filter((id) => (this.completed.get(id) ?? 0) > 1).length,
      runsStarted: sum(this.started),
      runsCompleted: sum(this.completed),
    };
  }
}
