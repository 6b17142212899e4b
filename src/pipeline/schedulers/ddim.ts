/**
 * DDIM: diffusers' DDIMScheduler with eta 0 (deterministic). For SD: clip_sample false,
 * set_alpha_to_one false (the last step lands on alphas_cumprod[0], paired with steps_offset 1).
 */
import { checkIndex, checkSameLength, checkSteps, spacedTimesteps, trainSchedule } from './noise-schedule.ts';
import type { LinearStep, NoiseSource, PredictionType, Scheduler, SchedulerConfig } from './types.ts';

export interface DdimOptions {
  /** Clamp the x0 prediction to [-1, 1] (default false; diffusers' class default is true). */
  clipSample?: boolean;
  /** Past the last timestep use alphas_cumprod = 1 instead of alphas_cumprod[0] (default false). */
  setAlphaToOne?: boolean;
}

export class DdimScheduler implements Scheduler {
  readonly name = 'ddim' as const;
  readonly timesteps: readonly number[];
  readonly initNoiseSigma = 1;
  private readonly alphasCumprod: Float64Array;
  private readonly finalAlphaCumprod: number;
  private readonly stride: number;
  private readonly prediction: PredictionType;
  private readonly clip: boolean;

  constructor(steps: number, config: SchedulerConfig, options: DdimOptions = {}) {
    const T = config.numTrainTimesteps;
    checkSteps(steps, T);
    this.alphasCumprod = trainSchedule(config).alphasCumprod;
    this.finalAlphaCumprod = options.setAlphaToOne ? 1 : this.alphasCumprod[0]!;
    this.timesteps = spacedTimesteps(config.timestepSpacing, steps, T, config.stepsOffset, 'ddim');
    for (const t of this.timesteps) {
      if (t < 0 || t >= T) throw new RangeError(`timestep ${t} outside [0, ${T - 1}]: lower stepsOffset`);
    }
    // diffusers steps back by T // steps whatever the spacing.
    this.stride = Math.floor(T / steps);
    this.prediction = config.predictionType;
    this.clip = options.clipSample ?? false;
  }

  scaleModelInput(sample: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    return sample;
  }

  step(modelOutput: Float32Array, stepIndex: number, sample: Float32Array, _noise: NoiseSource): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    checkSameLength(modelOutput, sample, 'step');
    const t = this.timesteps[stepIndex]!;
    const prevT = t - this.stride;
    const acp = this.alphasCumprod[t]!;
    const acpPrev = prevT >= 0 ? this.alphasCumprod[prevT]! : this.finalAlphaCumprod;
    const sqA = Math.sqrt(acp);
    const sqB = Math.sqrt(1 - acp);
    const sqAPrev = Math.sqrt(acpPrev);
    const sqBPrev = Math.sqrt(1 - acpPrev);
    // x0 = ax*x + am*m and eps = ex*x + em*m, for an eps or a v model output m.
    const eps = this.prediction === 'epsilon';
    const ax = eps ? 1 / sqA : sqA;
    const am = eps ? -sqB / sqA : -sqB;
    const ex = eps ? 0 : sqB;
    const em = eps ? 1 : sqA;
    const clip = this.clip;
    const out = new Float32Array(sample.length);
    for (let i = 0; i < out.length; i++) {
      const x = sample[i]!;
      const m = modelOutput[i]!;
      let x0 = ax * x + am * m;
      if (clip) x0 = x0 < -1 ? -1 : x0 > 1 ? 1 : x0;
      out[i] = sqAPrev * x0 + sqBPrev * (ex * x + em * m);
    }
    return out;
  }

  linearStep(stepIndex: number): LinearStep | undefined {
    checkIndex(stepIndex, this.timesteps.length);
    if (this.clip) return undefined;
    const t = this.timesteps[stepIndex]!;
    const prevT = t - this.stride;
    const acp = this.alphasCumprod[t]!;
    const acpPrev = prevT >= 0 ? this.alphasCumprod[prevT]! : this.finalAlphaCumprod;
    const [sqA, sqB, sqAPrev, sqBPrev] = [Math.sqrt(acp), Math.sqrt(1 - acp), Math.sqrt(acpPrev), Math.sqrt(1 - acpPrev)];
    const eps = this.prediction === 'epsilon';
    const [ax, am, ex, em] = eps ? [1 / sqA, -sqB / sqA, 0, 1] : [sqA, -sqB, sqB, sqA];
    return { x: sqAPrev * ax + sqBPrev * ex, model: sqAPrev * am + sqBPrev * em, prev: 0, noise: 0, keepX: 0, keepModel: 0 };
  }

  modelInputScale(): number {
    return 1;
  }

  addNoise(original: Float32Array, noise: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    return addNoiseVp(this.alphasCumprod[this.timesteps[stepIndex]!]!, original, noise);
  }
}

/** DDPM forward process at one timestep: sqrt(acp) * x0 + sqrt(1 - acp) * noise. */
export function addNoiseVp(alphaCumprod: number, original: Float32Array, noise: Float32Array): Float32Array {
  checkSameLength(original, noise, 'addNoise');
  const a = Math.sqrt(alphaCumprod);
  const b = Math.sqrt(1 - alphaCumprod);
  const out = new Float32Array(original.length);
  for (let i = 0; i < out.length; i++) out[i] = a * original[i]! + b * noise[i]!;
  return out;
}
