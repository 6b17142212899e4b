/**
 * Generated QR art for the scan benches: the seeded job mix of scan-jobs.ts, each job generated
 * with the demo graphs through the worker's own path (controlPlanFor -> jobControlImage ->
 * settingsFor -> the inference thread). Shared by the scan-check corpus (scan-corpus-make.ts)
 * and, for `npm run bench -- scan`, in place of its own start(), so both judge the same art.
 */
import type { JobControlImage } from '../../src/worker/control-image-runner.ts';
import { jobControlImage } from '../../src/worker/control-image-runner.ts';
import { settingsFor } from '../../src/worker/diffusion-runner.ts';
import type { InferenceClient } from '../../src/worker/inference-client.ts';
import type { InferenceResult } from '../../src/worker/inference-protocol.ts';
import { controlPlanFor } from '../../src/workflows/control.ts';
import type { QrWorkflowName } from '../../src/workflows/names.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import type { Job } from './scan-jobs.ts';

export { benchJobs, type Job } from './scan-jobs.ts';

export interface StartedJob {
  readonly job: Job;
  readonly workflow: QrWorkflowName;
  /** The create body's input after validation (defaults filled in). */
  readonly input: Record<string, unknown>;
  readonly control: JobControlImage;
  readonly generation: Promise<InferenceResult>;
}

/**
 * Validates the job's body as the API does, draws its control image and starts its generation
 * in the inference thread with `steps` sampling steps; resolves once the generation is queued.
 */
export async function startJob(client: InferenceClient, job: Job, index: number, steps: number, signal: AbortSignal): Promise<StartedJob> {
  const parsed = parseCreateBody(job.body, { allowPrivateUrls: false });
  if (!parsed.ok) throw new Error(`job ${index}: ${JSON.stringify(parsed.issues)}`);
  const { workflow, input, imageCount } = parsed.value;
  const plan = controlPlanFor(workflow, input);
  if (plan.kind !== 'content') throw new Error(`job ${index}: ${workflow} has no content plan`);
  const control = await jobControlImage(plan, { policy: { allowPrivate: false } }, signal);
  const settings = settingsFor(client.manifest, workflow as QrWorkflowName, input, imageCount);
  const generation = client.run({ ...settings, steps, control: control.image, width: plan.canvas.width, height: plan.canvas.height });
  return { job, workflow: workflow as QrWorkflowName, input: input as Record<string, unknown>, control, generation };
}
