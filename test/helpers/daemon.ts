import { pino } from 'pino';
import type { Queue } from '../../src/queue/connection.ts';
import { startWorkerDaemon, type WorkerDaemon, type WorkerDaemonOptions } from '../../src/worker/daemon.ts';
import type { JobRunner } from '../../src/worker/runner.ts';

/** A worker daemon taking one job at a time, silent, around a runner of the test's own (the daemon is what is tested). */
export function oneAtATimeDaemon(queue: Queue, runner: JobRunner, options: Partial<WorkerDaemonOptions> = {}): WorkerDaemon {
  return startWorkerDaemon({ queue, runner, logger: pino({ level: 'silent' }), prefetch: 0, maxInHand: 1, heartbeatMs: 1000, maxDeliver: 3, ...options });
}
