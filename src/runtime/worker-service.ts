import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { connectQueue } from '../queue/connection.ts';
import { ensureTopology } from '../queue/topology.ts';
import { ControlImageRunner } from '../worker/control-image-runner.ts';
import { startWorkerDaemon, type WorkerDaemon } from '../worker/daemon.ts';

export interface WorkerService {
  daemon: WorkerDaemon;
  stop(): Promise<void>;
}

/** The data plane: one NATS connection, the topology, and the pulling daemon. */
export async function startWorkerService(options: { config: Config; natsUrl: string; logger: Logger }): Promise<WorkerService> {
  const { config, logger } = options;
  const queue = await connectQueue(options.natsUrl, 'qr-art-worker');
  await ensureTopology(queue.jsm, { jobAckWaitMs: config.JOB_ACK_WAIT_MS, jobMaxDeliver: config.JOB_MAX_DELIVER });
  const daemon = startWorkerDaemon({
    queue,
    runner: new ControlImageRunner({
      policy: { allowPrivate: config.ALLOW_PRIVATE_URLS },
      fetchLimits: { totalTimeoutMs: config.IMAGE_FETCH_TIMEOUT_MS, maxBytes: config.IMAGE_MAX_BYTES, maxPixels: config.IMAGE_MAX_PIXELS },
    }),
    logger,
    concurrency: config.WORKER_CONCURRENCY,
    workerId: config.WORKER_ID,
    heartbeatMs: Math.max(1000, Math.floor(config.JOB_ACK_WAIT_MS / 3)),
  });
  return {
    daemon,
    async stop() {
      await daemon.stop();
      await queue.close();
    },
  };
}
