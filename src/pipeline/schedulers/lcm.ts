/**
 * LCM: diffusers' LCMScheduler. Timesteps are picked from the distillation schedule
 * (originalInferenceSteps evenly spaced training steps); each step applies the consistency
 * boundary conditions (c_skip, c_out) and, except after the last step, re-noises the denoised
 * estimate to the next timestep with fresh noise.
 */
import { addNoiseVp } from './ddim.ts';
import { checkIndex, checkSameLength, checkSteps, npLinspace, trainSchedule } from './noise-schedule.ts';
import type { LinearStep, NoiseSource, PredictionType, Scheduler, SchedulerConfig } from './types.ts';

const SIGMA_DATA = 0.5;

export class LcmScheduler implements Scheduler {
  readonly name = 'lcm' as const;
  readonly timesteps: readonly number[];
  readonly initNoiseSigma = 1;
  private readonly alphasCumprod: Float64Array;
  private readonly scaling: number;
  private readonly prediction: PredictionType;

  constructor(steps: number, config: SchedulerConfig) {
    const T = config.numTrainTimesteps;
    const original = lcmOriginalSteps(config);
    if (!Number.isInteger(original) || original < 1 || original > T) {
      throw new RangeError(`originalInferenceSteps must be an integer in [1, ${T}], got ${original}`);
    }
    checkSteps(steps, original);
    this.alphasCumprod = trainSchedule(config).alphasCumprod;
    // Distillation schedule k-1, 2k-1, ... (k = T // original), highest first; take `steps` of its
    // indices at floor(linspace(0, original, steps, endpoint=False)).
    const k = Math.floor(T / original);
    this.timesteps = npLinspace(0, original, steps, false).map((x) => (original - Math.floor(x)) * k - 1);
    this.scaling = config.timestepScaling ?? 10;
    this.prediction = config.predictionType;
  }

  scaleModelInput(sample: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    return sample;
  }

  /** denoised = cx·x + cm·m (c_out·x0 + c_skip·x, x0 from eps or v); then, before the last step, a·denoised + b·z. */
  private coefficients(stepIndex: number): { cx: number; cm: number; next?: { a: number; b: number } } {
    const steps = this.timesteps.length;
    checkIndex(stepIndex, steps);
    const t = this.timesteps[stepIndex]!;
    const acp = this.alphasCumprod[t]!;
    const sqA = Math.sqrt(acp);
    const sqB = Math.sqrt(1 - acp);
    // Boundary conditions: c_skip -> 1, c_out -> 0 as t -> 0, so the model is exact at t = 0.
    const st = t * this.scaling;
    const cSkip = (SIGMA_DATA * SIGMA_DATA) / (st * st + SIGMA_DATA * SIGMA_DATA);
    const cOut = st / Math.sqrt(st * st + SIGMA_DATA * SIGMA_DATA);
    const eps = this.prediction === 'epsilon';
    const cx = cOut * (eps ? 1 / sqA : sqA) + cSkip;
    const cm = -cOut * (eps ? sqB / sqA : sqB);
    if (stepIndex === steps - 1) return { cx, cm };
    const acpPrev = this.alphasCumprod[this.timesteps[stepIndex + 1]!]!;
    return { cx, cm, next: { a: Math.sqrt(acpPrev), b: Math.sqrt(1 - acpPrev) } };
  }

  step(modelOutput: Float32Array, stepIndex: number, sample: Float32Array, noise: NoiseSource): Float32Array {
    checkSameLength(modelOutput, sample, 'step');
    const { cx, cm, next } = this.coefficients(stepIndex);
    const n = sample.length;
    const out = new Float32Array(n);
    if (!next) {
      for (let i = 0; i < n; i++) out[i] = cx * sample[i]! + cm * modelOutput[i]!;
      return out;
    }
    const { a, b } = next;
    const z = noise(n);
    if (z.length !== n) throw new RangeError(`noise source returned ${z.length} values, wanted ${n}`);
    for (let i = 0; i < n; i++) {
      out[i] = a * (cx * sample[i]! + cm * modelOutput[i]!) + b * z[i]!;
    }
    return out;
  }

  linearStep(stepIndex: number): LinearStep {
    const { cx, cm, next } = this.coefficients(stepIndex);
    if (!next) return { x: cx, model: cm, prev: 0, noise: 0, keepX: 0, keepModel: 0 };
    return { x: next.a * cx, model: next.a * cm, prev: 0, noise: next.b, keepX: 0, keepModel: 0 };
  }

  modelInputScale(): number {
    return 1;
  }

  addNoise(original: Float32Array, noise: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    return addNoiseVp(this.alphasCumprod[this.timesteps[stepIndex]!]!, original, noise);
  }
}

/** The training steps LCM places its steps on (diffusers' original_inference_steps, 50 unless the config says). */
export function lcmOriginalSteps(config: Partial<SchedulerConfig>): number {
  return config.originalInferenceSteps ?? 50;
}
