/**
 * The sampler contract of the diffusion pipeline. Every scheduler follows diffusers (the reference
 * implementation) step for step; they differ only in what they do inside this small interface, so
 * the pipeline can swap them freely.
 *
 * Samples are flat Float32Arrays (any batch size: all schedulers are elementwise).
 */

export type SchedulerName = 'dpmpp_2m_karras' | 'euler_a' | 'ddim' | 'lcm';
export type BetaSchedule = 'scaled_linear' | 'linear';
export type PredictionType = 'epsilon' | 'v_prediction';
/** Table 2 of "Common Diffusion Noise Schedules and Sample Steps are Flawed", as diffusers implements it. */
export type TimestepSpacing = 'leading' | 'linspace' | 'trailing';

export interface SchedulerConfig {
  numTrainTimesteps: number;
  betaStart: number;
  betaEnd: number;
  betaSchedule: BetaSchedule;
  predictionType: PredictionType;
  timestepSpacing: TimestepSpacing;
  stepsOffset: number;
  /** LCM: length of the distillation schedule the inference steps are picked from. */
  originalInferenceSteps?: number;
  /** LCM: timestep multiplier in the c_skip/c_out boundary conditions. */
  timestepScaling?: number;
}

/**
 * Stable Diffusion 1.5 (its scheduler_config.json, plus LCM's defaults). Euler a overrides the
 * spacing to 'linspace' unless the caller names one (see createScheduler).
 */
export const SD15_SCHEDULER_CONFIG: Readonly<SchedulerConfig> = Object.freeze({
  numTrainTimesteps: 1000,
  betaStart: 0.00085,
  betaEnd: 0.012,
  betaSchedule: 'scaled_linear',
  predictionType: 'epsilon',
  timestepSpacing: 'leading',
  stepsOffset: 1,
  originalInferenceSteps: 50,
  timestepScaling: 10,
});

/** Fresh unit Gaussian noise of the given length (a seeded stream in production). */
export type NoiseSource = (length: number) => Float32Array;

/**
 * One step as a linear map, so it can run where the latents are (a device-side step graph,
 * pipeline/device-io.ts): with x the sample, m the model output, p the x0 estimate the previous
 * step kept and z fresh unit noise,
 *   x' = x·x + model·m + prev·p + noise·z      (z drawn only when noise ≠ 0)
 *   p' = keepX·x + keepModel·m                 (what a multistep solver remembers)
 * step() computes the same (in double precision between float32 stores).
 */
export interface LinearStep {
  readonly x: number;
  readonly model: number;
  readonly prev: number;
  readonly noise: number;
  readonly keepX: number;
  readonly keepModel: number;
}

export interface Scheduler {
  readonly name: SchedulerName;
  /** Model-facing timesteps, in the order they run (Euler a with 'linspace' spacing gives fractional ones). */
  readonly timesteps: readonly number[];
  /** Multiply unit Gaussian noise by this to make the starting latents. */
  readonly initNoiseSigma: number;
  /**
   * What the model is fed at step i: sigma schedulers divide by sqrt(sigma^2+1); the others return
   * `sample` itself (not a copy), so callers must not mutate the result.
   */
  scaleModelInput(sample: Float32Array, stepIndex: number): Float32Array;
  /**
   * One denoising step; returns a new sample and leaves the inputs untouched. `noise` is called
   * only by the steps that inject noise (Euler a, LCM between steps). Multistep solvers remember
   * the previous step; calling with any index other than the previous one + 1 starts them afresh.
   */
  step(modelOutput: Float32Array, stepIndex: number, sample: Float32Array, noise: NoiseSource): Float32Array;
  /**
   * img2img / refinement: noise clean latents to the level of step `stepIndex`, where the loop
   * then starts (see img2imgStartIndex for the strength -> index rule).
   */
  addNoise(original: Float32Array, noise: Float32Array, stepIndex: number): Float32Array;
  /**
   * Step `stepIndex` as a linear map (see LinearStep); `first` is the first step of a loop (no
   * remembered x0). Undefined where the step is not linear (DDIM with clip_sample).
   */
  linearStep(stepIndex: number, first: boolean): LinearStep | undefined;
  /** The factor scaleModelInput multiplies the sample by at `stepIndex`. */
  modelInputScale(stepIndex: number): number;
}
