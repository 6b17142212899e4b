/**
 * A worker's Prometheus metrics (docs/metrics.md is the contract), served at /metrics on
 * WORKER_METRICS_PORT. One instance per worker service, with a registry of its own: under
 * `start` the API has its own in the same process, and each endpoint shows only its series.
 *
 * Everything is recorded in the main thread. What the inference thread and the finishing pool
 * measure comes back in their result messages (InferenceResult.timings and .onnxRuns,
 * FinishResult's times), so no thread keeps a registry of its own.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { GRAPH_ROLES } from '../pipeline/manifest.ts';
import { isWorkflowName, WORKFLOWS } from '../workflows/names.ts';
import { JOB_STAGES, type JobStage, type StageSeconds } from './job-stages.ts';
import type { OnnxRuns } from './inference-protocol.ts';

/** How a job left this worker: published executed, failed (its input, out of memory), NSFW, or handed back to the queue. */
export const JOB_OUTCOMES = ['executed', 'failed', 'nsfw', 'handed_back'] as const;
export type JobOutcome = (typeof JOB_OUTCOMES)[number];

/** Seconds: 50 ms (the control-image pipeline) to 10 minutes (large outputs on a slow device). */
const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600];
/** Seconds: a queue can hold jobs far longer than one runs (a burst, the fleet scaling up). */
const WAIT_BUCKETS = [...JOB_BUCKETS, 1800, 3600];
/** Seconds: one session.run, from a millisecond (a small graph) to a minute (a VAE at UltraHD on a CPU). */
const ONNX_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const label = (workflow: string): string => (isWorkflowName(workflow) ? workflow : 'unknown');
const roleLabel = (role: string): string => ((GRAPH_ROLES as readonly string[]).includes(role) ? role : 'other');

export class WorkerMetrics {
  readonly registry = new Registry();
  private jobsInHand: () => number = () => 0;

  private readonly jobs = new Counter({
    name: 'qrart_worker_jobs_total',
    help: 'Jobs finished by this worker, by workflow and outcome',
    labelNames: ['workflow', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: 'qrart_worker_queue_wait_seconds',
    help: 'Prediction created to the device starting it (each attempt)',
    labelNames: ['workflow'] as const,
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  });
  private readonly jobDuration = new Histogram({
    name: 'qrart_worker_job_duration_seconds',
    help: 'Device start to the result published',
    labelNames: ['workflow'] as const,
    buckets: JOB_BUCKETS,
    registers: [this.registry],
  });
  private readonly stageDuration = new Histogram({
    name: 'qrart_worker_stage_duration_seconds',
    help: "Time one job spent in a stage (summed over its images and passes; a stage that did not run is not observed)",
    labelNames: ['stage'] as const,
    buckets: JOB_BUCKETS,
    registers: [this.registry],
  });
  private readonly onnxRun = new Histogram({
    name: 'qrart_worker_onnx_run_seconds',
    help: 'One session.run inside ONNX Runtime, by graph role',
    labelNames: ['role'] as const,
    buckets: ONNX_BUCKETS,
    registers: [this.registry],
  });
  private readonly images = new Counter({
    name: 'qrart_worker_images_total',
    help: 'Images produced (delivered in an executed result)',
    labelNames: ['workflow'] as const,
    registers: [this.registry],
  });
  private readonly scannable = new Counter({
    name: 'qrart_worker_scannable_images_total',
    help: 'isScanables verdicts on delivered images',
    labelNames: ['scannable'] as const,
    registers: [this.registry],
  });
  private readonly repaired = new Counter({
    name: 'qrart_worker_images_repaired_total',
    help: 'Images changed by the scan repair',
    registers: [this.registry],
  });
  private readonly modulesChanged = new Counter({
    name: 'qrart_worker_repair_modules_changed_total',
    help: 'QR modules the scan repair changed',
    registers: [this.registry],
  });
  private readonly threadRestarts = new Counter({
    name: 'qrart_worker_inference_thread_restarts_total',
    help: 'Inference threads replaced (a crash, a run that would not stop)',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    const metrics = this;
    new Gauge({
      name: 'qrart_worker_jobs_in_hand',
      help: 'Jobs held: on the device, waiting for it, being finished',
      registers: [this.registry],
      collect() {
        this.set(metrics.jobsInHand());
      },
    });
    // Every known label value starts at 0, so rates over series that have not moved yet are 0, not absent.
    for (const workflow of WORKFLOWS) {
      for (const outcome of JOB_OUTCOMES) this.jobs.inc({ workflow, outcome }, 0);
      this.images.inc({ workflow }, 0);
      this.queueWait.zero({ workflow });
      this.jobDuration.zero({ workflow });
    }
    for (const stage of JOB_STAGES) this.stageDuration.zero({ stage });
    for (const role of GRAPH_ROLES) this.onnxRun.zero({ role });
    for (const verdict of ['true', 'false']) this.scannable.inc({ scannable: verdict }, 0);
  }

  /** Where the jobs-in-hand gauge reads from (the daemon, once it exists). */
  countJobsInHand(source: () => number): void {
    this.jobsInHand = source;
  }

  /** The device started a job; `createdAt` is the prediction's creation (JobMessage.createdAt). */
  jobStarted(workflow: string, createdAt: string): void {
    const waited = (Date.now() - Date.parse(createdAt)) / 1000;
    if (Number.isFinite(waited)) this.queueWait.observe({ workflow: label(workflow) }, Math.max(0, waited));
  }

  /** A job left this worker; `seconds`: from the device start to its result published, when it got that far. */
  jobFinished(workflow: string, outcome: JobOutcome, seconds?: number): void {
    this.jobs.inc({ workflow: label(workflow), outcome });
    if (seconds !== undefined) this.jobDuration.observe({ workflow: label(workflow) }, seconds);
  }

  stage(stage: JobStage, seconds: number): void {
    this.stageDuration.observe({ stage }, seconds);
  }

  stages(stages: StageSeconds): void {
    for (const [stage, seconds] of Object.entries(stages) as [JobStage, number][]) this.stage(stage, seconds);
  }

  /** Every session.run of one generation (ms, by role: InferenceResult.onnxRuns). */
  onnxRuns(runs: OnnxRuns): void {
    for (const [role, durations] of Object.entries(runs)) {
      const labels = { role: roleLabel(role) };
      for (const ms of durations) this.onnxRun.observe(labels, ms / 1000);
    }
  }

  /** The images of an executed result, with their scan verdicts (absent for outputs without a code). */
  imagesDelivered(workflow: string, verdicts: readonly (boolean | undefined)[]): void {
    this.images.inc({ workflow: label(workflow) }, verdicts.length);
    for (const verdict of verdicts) if (verdict !== undefined) this.scannable.inc({ scannable: String(verdict) });
  }

  /** What the scan repair did to one job's images. */
  repairs(imagesChanged: number, modulesChanged: number): void {
    this.repaired.inc(imagesChanged);
    this.modulesChanged.inc(modulesChanged);
  }

  threadRestarted(): void {
    this.threadRestarts.inc();
  }
}
