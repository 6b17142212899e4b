/**
 * The diffusion job runner: a QR job in, artistic images that are scan-checked out.
 *
 *   control image   v4/v5: the content's code drawn where the request puts it (renderControlImage);
 *                   v1-v3b: the client's qrImage fetched, read and letterboxed (clientControlImage)
 *   settings        the manifest's defaults for the workflow (v5/v5s: for its model), overridden
 *                   by the request's own fields (see settingsFor)
 *   generation      in the inference thread (InferenceClient): txt2img + ControlNet, enhance=face,
 *                   NSFW flags; the main thread keeps heartbeating meanwhile
 *   NSFW            any flagged image rejects the whole job ({ kind: 'nsfw' })
 *   isScanables     ensureScannable of each image against the expected text: the scan check,
 *                   and at the request's qrRepair level the module repair (qr/guarantee.ts);
 *                   the verdict is on the image delivered
 *   files           PNG
 *   deadline        JOB_TIMEOUT_MS from the moment the thread starts the job (deadline.ts)
 * Outpainting jobs go to outpaint-job.ts.
 * The scan check, repair and PNG encoding of each image run on the finishing pool's threads as
 * soon as the inference thread hands the image over, so they overlap the rest of the batch, the
 * NSFW check and the next job's generation instead of following them.
 */
import type { Logger } from 'pino';
import type { RawImage } from '../image/raw.ts';
import type { ImageFetchLimits } from '../image/fetch.ts';
import type { OutboundPolicy } from '../net/safe-url.ts';
import { resolveWorkflow, type ManifestData } from '../pipeline/manifest.ts';
import { maxSteps } from '../pipeline/schedulers/index.ts';
import type { JobMessage } from '../messages/schemas.ts';
import { catalogue, isWorkflowName, samplingFor, type V5Model } from '../workflows/catalogue.ts';
import { controlPlanFor, repairModeFor } from '../workflows/control.ts';
import type { QrWorkflowName } from '../workflows/names.ts';
import type { PresetName } from '../workflows/presets.ts';
import { jobControlImage } from './control-image-runner.ts';
import { deadlineFor, underDeadline, type DeadlineSettings } from './deadline.ts';
import type { FinishPool, FinishResult } from './finish-pool.ts';
import type { InferenceClient } from './inference-client.ts';
import type { InferencePlan, InferenceResult, ThreadSpan } from './inference-protocol.ts';
import { runOutpaintJob } from './outpaint-job.ts';
import type { WorkerMetrics } from './metrics.ts';
import { JobInputError, type JobRunner, type RenderedImage, type RunHooks, type RunOutcome } from './runner.ts';

export interface DiffusionRunnerOptions {
  /** A started client (its manifest gives the defaults). */
  readonly inference: InferenceClient;
  /** Where scan check, repair and PNG encoding run. */
  readonly finishing: FinishPool;
  readonly logger: Logger;
  /** Outbound rules and limits for qrImage fetches (v1-v3b). */
  readonly policy: OutboundPolicy;
  readonly fetchLimits?: Partial<ImageFetchLimits>;
  /** Per-job deadline (JOB_TIMEOUT_MS, or derived from steps and size). */
  readonly deadline?: DeadlineSettings;
  /** Where the finishing stages and the repairs are recorded (the thread's stages: the inference client's). */
  readonly metrics?: WorkerMetrics;
}

/** The generation settings of a job: everything of InferencePlan but the control image and size. */
export type JobSettings = Omit<InferencePlan, 'control' | 'width' | 'height'>;

export interface DetailedRun {
  readonly outcome: RunOutcome;
  /** Milliseconds per stage: control image, the thread's stages, scan, png, total. */
  readonly timings: Record<string, number>;
  /** The seed of image 0 (image i used seed + i). */
  readonly seed: number;
  readonly width: number;
  readonly height: number;
  /** When the inference thread ran the job (its clock). */
  readonly threadSpan?: ThreadSpan;
}

/** runDetailed's options: the daemon's hooks, all optional (the CLI and the bench run jobs directly). */
export type DetailedOptions = Partial<RunHooks>;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * Manifest defaults (steps, guidance, scheduler, control window) overridden by the request:
 * v5/v5s: prompt, negativePrompt, seed, steps, cfg, qrStrength, preset, model, enhance (steps
 * and cfg clamped into the workflow's sampling range: v5s accepts a v5 body and runs at most 12
 * steps, cfg at most 3; catalogue.ts samplingFor);
 * v4 family: qrText is the prompt, qrSteps the steps (v4 has none: the manifest's);
 * v1-v3b: qrText is the prompt, qrSteps the steps, one image.
 * The input has passed parseCreateBody, so present fields are in range.
 */
export function settingsFor(manifest: ManifestData, workflow: QrWorkflowName, input: Readonly<Record<string, unknown>>, imageCount: number): JobSettings {
  const entry = catalogue[workflow];
  if (entry.family === 'outpainting') throw new JobInputError(`${workflow} is not a QR workflow`, 'workflow_unavailable');
  const v5Model = entry.family === 'qr-v5' ? (str(input.model) as V5Model | undefined) ?? entry.enumDefaults.model : undefined;
  const resolved = resolveWorkflow(manifest, workflow, v5Model);
  const { settings } = resolved;
  const seed = num(input.seed);
  if (seed === undefined) throw new JobInputError('the job has no seed (the API resolves one at creation)');
  const common = {
    workflow,
    seed,
    scheduler: resolved.scheduler,
    controlStart: settings.controlStart,
    controlEnd: settings.controlEnd,
    ...(str(input.negativePrompt) ? { negativePrompt: str(input.negativePrompt)! } : {}),
  };
  if (entry.family === 'qr-v5') {
    // The input keeps what the client asked; this is what the tier's sampler runs.
    const sampled = samplingFor(entry, { steps: num(input.steps) ?? settings.steps, cfg: num(input.cfg) ?? settings.guidance });
    return {
      ...common,
      v5Model: v5Model!,
      prompt: str(input.prompt) ?? '',
      ...(str(input.preset) ? { preset: str(input.preset) as PresetName } : {}),
      batchSize: imageCount,
      // An LCM sampler (a manifest may give v5 one) takes at most its originalInferenceSteps.
      steps: Math.min(sampled.steps, maxSteps(resolved.scheduler, resolved.schedulerConfig)),
      guidance: sampled.cfg,
      controlScale: num(input.qrStrength) ?? entry.params.qrStrength.default,
      enhanceFace: input.enhance === 'face',
    };
  }
  return {
    ...common,
    prompt: str(input.qrText) ?? '',
    batchSize: entry.family === 'qr-image' ? 1 : imageCount,
    // v4s accepts qrSteps up to 60 (spec) and runs LCM, which takes at most its
    // originalInferenceSteps (50 by default): more run as many as it takes (v5 likewise, above).
    steps: Math.min(num(input.qrSteps) ?? settings.steps, maxSteps(resolved.scheduler, resolved.schedulerConfig)),
    guidance: settings.guidance,
    controlScale: num(input.qrStrength) ?? entry.params.qrStrength.default,
  };
}

export class DiffusionRunner implements JobRunner {
  readonly name = 'diffusion';
  /** Since this worker started: images checked, images repaired, modules changed (logged with every job). */
  readonly repairTotals = { images: 0, repaired: 0, changedModules: 0 };

  constructor(private readonly options: DiffusionRunnerOptions) {}

  async run(job: JobMessage, hooks: RunHooks): Promise<RunOutcome> {
    return (await this.runDetailed(job, hooks)).outcome;
  }

  /** run() with stage timings and a per-step progress callback (the CLI draws its bar from it). */
  async runDetailed(job: JobMessage, options: DetailedOptions = {}): Promise<DetailedRun> {
    const t0 = performance.now();
    const timings: Record<string, number> = {};
    const log = this.options.logger.child({ predictionId: job.id, workflow: job.workflow });
    if (!isWorkflowName(job.workflow)) throw new JobInputError(`unknown workflow ${job.workflow}`);
    if (job.workflow === 'outpainting') return runOutpaintJob(job, { ...this.options, ...options });
    const plan = controlPlanFor(job.workflow, job.input);
    if (plan.kind === 'none') throw new JobInputError(`${job.workflow} has no control image`, 'workflow_unavailable');
    const settings = settingsFor(this.options.inference.manifest, job.workflow, job.input, job.imageCount);

    const signal = options.signal ?? new AbortController().signal;
    const fetchOptions = { policy: this.options.policy, ...(this.options.fetchLimits ? { fetchLimits: this.options.fetchLimits } : {}) };
    const { image: control, expected, codeSide, geometry, clientCode } = await jobControlImage(plan, fetchOptions, signal);
    // v1-v3b: a client code that could not be located leaves the job's images checked, not repaired.
    if (clientCode) log.info({ clientCode }, clientCode.located ? 'client QR code located: its images can be repaired' : 'client QR code not located: its images are only checked');
    const scan = { expected, geometry, mode: repairModeFor(job.workflow, job.input), codeSide };
    timings.qr_render = performance.now() - t0;
    const { width, height } = plan.canvas;
    const inferencePlan: InferencePlan = { ...settings, control, width, height };

    // Each image goes to the finishing pool (scan check, repair, PNG) as soon as the thread
    // hands it over, while the thread goes on with the next image, the NSFW check, the next job.
    const finishing: Promise<FinishResult>[] = [];
    const finish = (image: RawImage): Promise<FinishResult> => this.options.finishing.finish(image, scan);
    const i0 = performance.now();
    const result: InferenceResult = await underDeadline(deadlineFor(inferencePlan, this.nativeSize(settings), this.options.deadline), { ...options, signal }, (deadlineSignal, onStart) =>
      this.options.inference.run(inferencePlan, {
        signal: deadlineSignal,
        onStart,
        onProgress: (step, total) => {
          log.debug({ step, total }, 'generation step');
          options.onProgress?.(step, total);
        },
        onImage: (index, image) => {
          finishing[index] = finish(image);
          // Observed below; an NSFW or failed run may never await it.
          finishing[index].catch(() => undefined);
        },
      }),
    );
    Object.assign(timings, result.timings);
    // The whole round trip to the thread (waiting behind another job included).
    timings.inference = performance.now() - i0;
    delete timings.total;

    if (result.nsfw.some(Boolean)) {
      log.info({ flags: result.nsfw }, 'generation flagged as NSFW');
      timings.total = performance.now() - t0;
      return { outcome: { kind: 'nsfw' }, timings, seed: settings.seed, width, height, threadSpan: result.span };
    }

    const f0 = performance.now();
    const finished = await Promise.all(result.images.map((image, i) => finishing[i] ?? finish(image)));
    // Scan and PNG overlap the generation; `finish` is what is left of them after it.
    timings.finish = performance.now() - f0;
    timings.scan = finished.reduce((sum, f) => sum + f.scanMs, 0);
    timings.png = finished.reduce((sum, f) => sum + f.pngMs, 0);
    timings.total = performance.now() - t0;
    const images: RenderedImage[] = finished.map((f) => ({ data: new Uint8Array(f.png), extension: 'png', isScannable: f.scannable!, ...(f.robustness !== undefined ? { scanRobustness: f.robustness } : {}) }));
    const repair = { mode: scan.mode, repaired: finished.filter((f) => f.repaired).length, changedModules: finished.reduce((n, f) => n + f.changedModules, 0) };
    this.repairTotals.images += finished.length;
    this.repairTotals.repaired += repair.repaired;
    this.repairTotals.changedModules += repair.changedModules;
    this.recordFinishing(finished);
    // steps and guidance as sampled (a v5s job's may be below what its input asked: settingsFor).
    log.info({ isScanables: images.map((im) => im.isScannable), steps: settings.steps, guidance: settings.guidance, repair, repairTotals: this.repairTotals, ms: roundAll(timings) }, 'generation done');
    return { outcome: { kind: 'images', images }, timings, seed: settings.seed, width, height, threadSpan: result.span };
  }

  /** The CPU tail of one job, summed over its images (the finishing threads time it; the metrics live here). */
  private recordFinishing(finished: readonly FinishResult[]): void {
    const metrics = this.options.metrics;
    if (!metrics) return;
    const sum = (pick: (f: FinishResult) => number): number => finished.reduce((total, f) => total + pick(f), 0) / 1000;
    metrics.stage('scan_check', sum((f) => f.scanMs - f.repairMs));
    if (finished.some((f) => f.repairMs > 0)) metrics.stage('repair', sum((f) => f.repairMs));
    metrics.stage('png_encode', sum((f) => f.pngMs));
    metrics.repairs(finished.filter((f) => f.repaired).length, finished.reduce((n, f) => n + f.changedModules, 0));
  }

  private nativeSize(settings: JobSettings): number {
    return resolveWorkflow(this.options.inference.manifest, settings.workflow, settings.v5Model).model.nativeSize;
  }
}

function roundAll(timings: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v)]));
}
