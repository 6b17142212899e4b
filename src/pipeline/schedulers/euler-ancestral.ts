/**
 * Euler ancestral: diffusers' EulerAncestralDiscreteScheduler (k-diffusion's sample_euler_ancestral,
 * A1111's "Euler a"). The sample lives in sigma space (x = x0 + sigma*eps): the model input is
 * divided by sqrt(sigma^2+1) and fresh noise of size sigma_up is added after every step.
 *
 * Spacing: diffusers' own default for this scheduler, and k-diffusion's, is 'linspace' (first step
 * at t = 999, sigma_max); SD1.5's scheduler_config.json carries 'leading' only because it was
 * written for PNDM. createScheduler therefore uses 'linspace' unless the caller names a spacing.
 */
import { checkIndex, checkSameLength, checkSteps, sigmaAt, spacedTimesteps, trainSchedule } from './noise-schedule.ts';
import type { LinearStep, NoiseSource, PredictionType, Scheduler, SchedulerConfig } from './types.ts';

const f32 = Math.fround;

export class EulerAncestralScheduler implements Scheduler {
  readonly name = 'euler_a' as const;
  readonly timesteps: readonly number[];
  readonly initNoiseSigma: number;
  /** Sigma per step plus a final 0 (float32 values). */
  readonly sigmas: readonly number[];
  private readonly prediction: PredictionType;

  constructor(steps: number, config: SchedulerConfig) {
    checkSteps(steps, config.numTrainTimesteps);
    const schedule = trainSchedule(config);
    // Fractional timesteps with 'linspace' (float32, as diffusers keeps them).
    this.timesteps = spacedTimesteps(config.timestepSpacing, steps, config.numTrainTimesteps, config.stepsOffset, 'ddim', false);
    this.sigmas = [...this.timesteps.map((t) => f32(sigmaAt(schedule, t))), 0];
    const max = Math.max(...this.sigmas);
    // diffusers: sigma_max for linspace/trailing, sqrt(sigma_max^2 + 1) for leading.
    this.initNoiseSigma = config.timestepSpacing === 'leading' ? Math.sqrt(max * max + 1) : max;
    this.prediction = config.predictionType;
  }

  scaleModelInput(sample: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    const sigma = this.sigmas[stepIndex]!;
    const scale = 1 / Math.sqrt(sigma * sigma + 1);
    const out = new Float32Array(sample.length);
    for (let i = 0; i < out.length; i++) out[i] = sample[i]! * scale;
    return out;
  }

  step(modelOutput: Float32Array, stepIndex: number, sample: Float32Array, noise: NoiseSource): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    checkSameLength(modelOutput, sample, 'step');
    const n = sample.length;
    const sigma = this.sigmas[stepIndex]!;
    const sigmaTo = this.sigmas[stepIndex + 1]!;
    const sigmaUp = Math.sqrt((sigmaTo * sigmaTo * (sigma * sigma - sigmaTo * sigmaTo)) / (sigma * sigma));
    const sigmaDown = Math.sqrt(sigmaTo * sigmaTo - sigmaUp * sigmaUp);
    const dt = sigmaDown - sigma;

    // x0 = cx*x + cm*m (epsilon: x - sigma*eps; v: x/(sigma^2+1) - v*sigma/sqrt(sigma^2+1)).
    const eps = this.prediction === 'epsilon';
    const cx = eps ? 1 : 1 / (sigma * sigma + 1);
    const cm = eps ? -sigma : -sigma / Math.sqrt(sigma * sigma + 1);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const x = sample[i]!;
      const x0 = cx * x + cm * modelOutput[i]!;
      out[i] = x + ((x - x0) / sigma) * dt; // Euler step to sigma_down along d = (x - x0)/sigma
    }
    if (sigmaUp > 0) {
      const z = noise(n);
      if (z.length !== n) throw new RangeError(`noise source returned ${z.length} values, wanted ${n}`);
      for (let i = 0; i < n; i++) out[i] = out[i]! + z[i]! * sigmaUp;
    }
    return out;
  }

  linearStep(stepIndex: number): LinearStep {
    checkIndex(stepIndex, this.timesteps.length);
    const sigma = this.sigmas[stepIndex]!;
    const sigmaTo = this.sigmas[stepIndex + 1]!;
    const sigmaUp = Math.sqrt((sigmaTo * sigmaTo * (sigma * sigma - sigmaTo * sigmaTo)) / (sigma * sigma));
    const dt = Math.sqrt(sigmaTo * sigmaTo - sigmaUp * sigmaUp) - sigma;
    const eps = this.prediction === 'epsilon';
    const cx = eps ? 1 : 1 / (sigma * sigma + 1);
    const cm = eps ? -sigma : -sigma / Math.sqrt(sigma * sigma + 1);
    // x + (x - x0)/sigma * dt with x0 = cx*x + cm*m, then + sigmaUp * z.
    return { x: 1 + ((1 - cx) * dt) / sigma, model: (-cm * dt) / sigma, prev: 0, noise: sigmaUp, keepX: 0, keepModel: 0 };
  }

  modelInputScale(stepIndex: number): number {
    checkIndex(stepIndex, this.timesteps.length);
    const sigma = this.sigmas[stepIndex]!;
    return 1 / Math.sqrt(sigma * sigma + 1);
  }

  addNoise(original: Float32Array, noise: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    checkSameLength(original, noise, 'addNoise');
    const sigma = this.sigmas[stepIndex]!;
    const out = new Float32Array(original.length);
    for (let i = 0; i < out.length; i++) out[i] = original[i]! + noise[i]! * sigma;
    return out;
  }
}
