import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { connectQueue } from '../queue/connection.ts';
import { ensureTopology } from '../queue/topology.ts';
import { ControlImageRunner } from '../worker/control-image-runner.ts';
import { startWorkerDaemon, type WorkerDaemon } from '../worker/daemon.ts';
import { DiffusionRunner } from '../worker/diffusion-runner.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../worker/inference-client.ts';
import type { JobRunner } from '../worker/runner.ts';

export interface WorkerService {
  daemon: WorkerDaemon;
  stop(): Promise<void>;
}

/** The data plane: one NATS connection, the topology, the models (loaded before the first pull) and the pulling daemon. */
export async function startWorkerService(options: { config: Config; natsUrl: string; logger: Logger }): Promise<WorkerService> {
  const { config, logger } = options;
  const queue = await connectQueue(options.natsUrl, 'qr-art-worker');
  await ensureTopology(queue.jsm, { jobAckWaitMs: config.JOB_ACK_WAIT_MS, jobMaxDeliver: config.JOB_MAX_DELIVER });
  const policy = { allowPrivate: config.ALLOW_PRIVATE_URLS };
  const fetchLimits = { totalTimeoutMs: config.IMAGE_FETCH_TIMEOUT_MS, maxBytes: config.IMAGE_MAX_BYTES, maxPixels: config.IMAGE_MAX_PIXELS };
  let inference: InferenceClient | undefined;
  let runner: JobRunner;
  if (config.WORKER_PIPELINE === 'diffusion') {
    try {
      inference = await InferenceClient.start({
        manifestPath: config.MODELS_MANIFEST ?? DEFAULT_MANIFEST_PATH,
        executionProvider: config.EXECUTION_PROVIDER === 'cuda' ? { provider: 'cuda', deviceId: config.CUDA_DEVICE_ID } : { provider: 'cpu' },
        logger: logger.child({ component: 'inference' }),
        ...(config.INFERENCE_THREADS !== undefined ? { intraOpThreads: config.INFERENCE_THREADS } : {}),
      });
    } catch (error) {
      await queue.close();
      throw error;
    }
    runner = new DiffusionRunner({ inference, logger, policy, fetchLimits });
  } else {
    runner = new ControlImageRunner({ policy, fetchLimits });
  }
  const daemon = startWorkerDaemon({
    queue,
    runner,
    logger,
    concurrency: config.WORKER_CONCURRENCY,
    workerId: config.WORKER_ID,
    heartbeatMs: Math.max(1000, Math.floor(config.JOB_ACK_WAIT_MS / 3)),
  });
  return {
    daemon,
    async stop() {
      await daemon.stop();
      await inference?.close();
      await queue.close();
    },
  };
}
