/**
 * The stages of a job as the worker's metrics name them (qrart_worker_stage_duration_seconds,
 * docs/metrics.md), and how the inference thread's own stage timings fold into them. The thread
 * times finer pieces, under names that depend on the pipeline (txt2img, its refinement and face
 * passes, outpainting); a dashboard wants the few stages a job is made of, whatever ran them.
 */

export const JOB_STAGES = ['text_encoder', 'denoise', 'vae', 'nsfw', 'scan_check', 'repair', 'png_encode', 'upload'] as const;
export type JobStage = (typeof JOB_STAGES)[number];

/** Seconds per stage of one job; a stage that did not run is absent. */
export type StageSeconds = Partial<Record<JobStage, number>>;

/** The passes after generation put their prefix on the same stage names (txt2img.ts). */
const PASS_PREFIX = /^(refine_|face_)/;

/** A thread timing's stage, or undefined for the small ones no stage counts (control planes, resizes, canvas work, totals). */
function stageOf(timing: string): JobStage | undefined {
  const name = timing.replace(PASS_PREFIX, '');
  switch (name) {
    case 'text_encoder':
    case 'tokenize_text_encoder': // outpainting
      return 'text_encoder';
    case 'denoiser':
    case 'controlnet':
    case 'unet':
    case 'scheduler':
      return 'denoise';
    case 'vae_encode':
    case 'vae_decode':
      return 'vae';
    case 'nsfw':
      return 'nsfw';
    default:
      return undefined;
  }
}

/** The inference thread's timings (ms, InferenceResult.timings) as seconds per job stage. */
export function threadStageSeconds(timings: Readonly<Record<string, number>>): StageSeconds {
  const stages: StageSeconds = {};
  for (const [timing, ms] of Object.entries(timings)) {
    const stage = stageOf(timing);
    if (stage) stages[stage] = (stages[stage] ?? 0) + ms / 1000;
  }
  return stages;
}
