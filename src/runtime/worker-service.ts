import type { Logger } from 'pino';
import { topologyOptions, warmUpSizes, type Config } from '../config.ts';
import { parseExecutionProvider } from '../pipeline/providers.ts';
import { connectQueueWaiting } from '../queue/connection.ts';
import { ensureTopology } from '../queue/topology.ts';
import { keepTopologyAfterReconnects } from '../queue/topology-keeper.ts';
import { ControlImageRunner } from '../worker/control-image-runner.ts';
import { startWorkerDaemon, type WorkerDaemon } from '../worker/daemon.ts';
import { DiffusionRunner } from '../worker/diffusion-runner.ts';
import { defaultFinishThreads, FinishPool } from '../worker/finish-pool.ts';
import { startWorkerHealthServer, type WorkerHealthServer } from '../worker/health-server.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../worker/inference-client.ts';
import { WorkerMetrics } from '../worker/metrics.ts';
import type { JobRunner } from '../worker/runner.ts';

export interface WorkerService {
  daemon: WorkerDaemon;
  /** Readiness: pulling and connected, the inference thread serving (the worker's /readyz and `start`'s). */
  readiness: { readonly pulling: () => Promise<boolean>; readonly inference: () => Promise<boolean> };
  metrics: WorkerMetrics;
  /** The worker's HTTP address (WORKER_METRICS_PORT: /metrics, /healthz, /readyz), when it has one. */
  httpAddress?: string;
  /** Settles when the device is given up (the process should exit non-zero); never otherwise. */
  fatal: Promise<Error>;
  /** The inference thread has ended (false: it is stuck in native code, and only a hard exit ends the process). */
  stop(): Promise<void>;
}

/** The data plane: one NATS connection, the topology, the models (loaded before the first pull) and the pulling daemon. */
export async function startWorkerService(options: { config: Config; natsUrl: string; logger: Logger }): Promise<WorkerService> {
  const { config, logger } = options;
  const queue = await connectQueueWaiting(options.natsUrl, 'qr-art-worker', config.NATS_STARTUP_WAIT_MS, (error) =>
    logger.warn({ err: error.cause ?? error }, 'NATS not reachable yet; waiting for it'),
  );
  await ensureTopology(queue.jsm, topologyOptions(config));
  keepTopologyAfterReconnects(queue, topologyOptions(config), logger);
  // One per service, handed to every piece that records (tests run several services in a process).
  const metrics = new WorkerMetrics();
  const policy = { allowPrivate: config.ALLOW_PRIVATE_URLS };
  const fetchLimits = { totalTimeoutMs: config.IMAGE_FETCH_TIMEOUT_MS, maxBytes: config.IMAGE_MAX_BYTES, maxPixels: config.IMAGE_MAX_PIXELS };
  let reportFatal!: (error: Error) => void;
  const fatal = new Promise<Error>((resolve) => (reportFatal = resolve));
  let daemon: WorkerDaemon | undefined;
  let inference: InferenceClient | undefined;
  let finishing: FinishPool | undefined;
  let runner: JobRunner;
  if (config.WORKER_PIPELINE === 'diffusion') {
    try {
      inference = await InferenceClient.start({
        manifestPath: config.MODELS_MANIFEST ?? DEFAULT_MANIFEST_PATH,
        executionProvider: parseExecutionProvider(config.EXECUTION_PROVIDER, config.CUDA_DEVICE_ID),
        logger: logger.child({ component: 'inference' }),
        ...(config.INFERENCE_THREADS !== undefined ? { intraOpThreads: config.INFERENCE_THREADS } : {}),
        warmUp: warmUpSizes(config.WARMUP_SIZES),
        abortGraceMs: config.JOB_ABORT_GRACE_MS,
        exitGraceMs: config.JOB_ABORT_GRACE_MS,
        restartTimeoutMs: config.WORKER_RESTART_TIMEOUT_MS,
        ...(config.QR_ART_FAULT_INJECTION ? { faultInjection: config.QR_ART_FAULT_INJECTION } : {}),
        // A thread that is stuck or cannot start again: hand the jobs back and give the device up.
        onFatal: (error) => void (daemon ? daemon.fatal(error) : reportFatal(error)),
        metrics,
      });
    } catch (error) {
      await queue.close();
      throw error;
    }
    finishing = new FinishPool(config.FINISH_THREADS ?? defaultFinishThreads());
    runner = new DiffusionRunner({
      inference,
      finishing,
      logger,
      policy,
      fetchLimits,
      deadline: config.JOB_TIMEOUT_MS !== undefined ? { fixedMs: config.JOB_TIMEOUT_MS } : {},
      metrics,
    });
  } else {
    runner = new ControlImageRunner({ policy, fetchLimits });
  }
  const readiness = {
    pulling: async () => daemon?.ready() ?? false,
    inference: async () => (inference ? inference.state === 'ready' : true),
  };
  metrics.countJobsInHand(() => daemon?.inHand() ?? 0);
  let http: WorkerHealthServer | undefined;
  const stop = async (): Promise<void> => {
    await daemon?.stop();
    await http?.close();
    await finishing?.close();
    await inference?.close();
    await queue.close();
  };
  // Bound before the first pull: a worker that cannot serve its probes (the port is taken, most
  // likely) exits without having taken a job it would then have to finish first.
  if (config.WORKER_METRICS_PORT !== undefined && config.WORKER_METRICS_PORT !== 'off') {
    try {
      http = await startWorkerHealthServer({ port: config.WORKER_METRICS_PORT, host: config.HOST, checks: readiness, registry: metrics.registry, logger });
    } catch (error) {
      await stop();
      throw error;
    }
    logger.info({ address: http.address, metrics: `${http.address}/metrics` }, 'worker health endpoint listening');
  }
  daemon = startWorkerDaemon({
    queue,
    runner,
    logger,
    prefetch: config.WORKER_PREFETCH,
    maxInHand: Math.max(config.WORKER_CONCURRENCY, 1 + config.WORKER_PREFETCH),
    ...(inference ? { deviceAccepting: () => inference.accepting } : {}),
    expiresAfterMs: config.PREDICTION_EXPIRY_HOURS * 3600_000,
    workerId: config.WORKER_ID,
    // Three signs of life per ack window (JOB_ACK_WAIT_MS is at least 1 s).
    heartbeatMs: Math.floor(config.JOB_ACK_WAIT_MS / 3),
    onFatal: reportFatal,
    // The exiting process waits JOB_ABORT_GRACE_MS for its stop (cli.ts): a job past the device
    // that is not delivered by two thirds of it is handed back while the connection is still up.
    finishAfterFaultMs: Math.floor((config.JOB_ABORT_GRACE_MS * 2) / 3),
    metrics,
    maxDeliver: config.JOB_MAX_DELIVER,
  });
  return {
    daemon,
    readiness,
    metrics,
    ...(http ? { httpAddress: http.address } : {}),
    fatal,
    stop,
  };
}
