/**
 * DPM-Solver++ 2M with Karras sigmas: diffusers' DPMSolverMultistepScheduler with
 * algorithm_type 'dpmsolver++', solver_order 2, solver_type 'midpoint', use_karras_sigmas (rho 7),
 * lower_order_final, final_sigmas_type 'zero'. The sample lives in VP space (x = a*x0 + s*eps), so
 * the model input is not scaled and the initial noise sigma is 1.
 */
import {
  alphaSigma,
  checkIndex,
  checkSameLength,
  checkSteps,
  karrasSigmas,
  roundHalfEven,
  sigmaAt,
  sigmaToT,
  spacedTimesteps,
  trainSchedule,
} from './noise-schedule.ts';
import type { LinearStep, NoiseSource, PredictionType, Scheduler, SchedulerConfig } from './types.ts';

const f32 = Math.fround;

/** Knobs diffusers' own tests turn; the registry uses the SD defaults. */
export interface DpmSolverOptions {
  /** Karras sigmas (default true); false uses the config's timestep spacing, as diffusers does. */
  karras?: boolean;
  /** Sigma after the last step (default 'zero': the last step returns the x0 prediction). */
  finalSigma?: 'zero' | 'sigma_min';
  /** First-order last step when there are fewer than 15 steps (default true). */
  lowerOrderFinal?: boolean;
}

export class DpmSolverMultistepScheduler implements Scheduler {
  readonly name = 'dpmpp_2m_karras' as const;
  readonly timesteps: readonly number[];
  readonly initNoiseSigma = 1;
  /** Sigma per step plus the final one (float32 values, as diffusers keeps them). */
  readonly sigmas: readonly number[];

  private readonly prediction: PredictionType;
  private readonly firstOrderLast: boolean;
  /** x0 predictions: the current step's and the previous one's; swapped, not reallocated. */
  private x0: Float32Array = new Float32Array(0);
  private prevX0: Float32Array = new Float32Array(0);
  private lastIndex = -2;

  constructor(steps: number, config: SchedulerConfig, options: DpmSolverOptions = {}) {
    const T = config.numTrainTimesteps;
    checkSteps(steps, T);
    const schedule = trainSchedule(config);
    const finalSigma = options.finalSigma ?? 'zero';
    const lowerOrderFinal = options.lowerOrderFinal ?? true;
    let sigmas: number[];
    let timesteps: number[];
    if (options.karras ?? true) {
      const s = schedule.sigmas;
      sigmas = karrasSigmas(s[0]!, s[s.length - 1]!, steps);
      timesteps = sigmas.map((sigma) => roundHalfEven(sigmaToT(sigma, schedule)));
    } else {
      timesteps = spacedTimesteps(config.timestepSpacing, steps, T, config.stepsOffset, 'dpm');
      sigmas = timesteps.map((t) => sigmaAt(schedule, t));
    }
    // 'sigma_min' repeats the smallest training sigma (for Karras that is the last Karras sigma).
    sigmas.push(finalSigma === 'zero' ? 0 : schedule.sigmas[0]!);
    this.sigmas = sigmas.map(f32);
    this.timesteps = timesteps;
    this.prediction = config.predictionType;
    // diffusers: the last step is first order when lower_order_final applies or the final sigma is 0.
    this.firstOrderLast = finalSigma === 'zero' || (lowerOrderFinal && steps < 15);
  }

  scaleModelInput(sample: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    return sample;
  }

  step(modelOutput: Float32Array, stepIndex: number, sample: Float32Array, _noise: NoiseSource): Float32Array {
    const steps = this.timesteps.length;
    checkIndex(stepIndex, steps);
    checkSameLength(modelOutput, sample, 'step');
    const n = sample.length;
    // The multistep history only counts if it is the previous step of this same run.
    const continuing = this.lastIndex === stepIndex - 1 && this.prevX0.length === n;
    const secondOrder = continuing && !(stepIndex === steps - 1 && this.firstOrderLast);

    // Current x0 goes into the buffer that does not hold the previous one.
    let x0 = this.x0;
    if (x0.length !== n || x0 === this.prevX0) x0 = new Float32Array(n);

    const sigmaS = this.sigmas[stepIndex]!;
    const sigmaNext = this.sigmas[stepIndex + 1]!;
    const { alpha: aS, sigmaT: sS } = alphaSigma(sigmaS);
    const { alpha: aT, sigmaT: sT } = alphaSigma(sigmaNext);
    const out = new Float32Array(n);

    // x0 = (x - s*eps)/a for epsilon, a*x - s*v for v-prediction, folded into two coefficients.
    const eps = this.prediction === 'epsilon';
    const cx = eps ? 1 / aS : aS;
    const cm = eps ? -sS / aS : -sS;

    if (sigmaNext === 0) {
      // Limit of the first-order update as sigma -> 0 (diffusers reaches it through log(0) = -inf).
      for (let i = 0; i < n; i++) {
        const v = cx * sample[i]! + cm * modelOutput[i]!;
        x0[i] = v;
        out[i] = v;
      }
    } else {
      // lambda = log(alpha/sigma_t) = -log(sigma); h = lambda_t - lambda_s.
      const h = Math.log(sigmaS / sigmaNext);
      const a = sT / sS;
      const b = -aT * Math.expm1(-h); // -alpha_t * (exp(-h) - 1)
      if (!secondOrder) {
        for (let i = 0; i < n; i++) {
          const v = cx * sample[i]! + cm * modelOutput[i]!;
          x0[i] = v;
          out[i] = a * sample[i]! + b * v;
        }
      } else {
        // Midpoint 2M: D0 + D1/2 with D1 = (m0 - m1)/r0, r0 = h_prev/h.
        const hPrev = Math.log(this.sigmas[stepIndex - 1]! / sigmaS);
        const k = (0.5 * h) / hPrev;
        const prev = this.prevX0;
        for (let i = 0; i < n; i++) {
          const v = cx * sample[i]! + cm * modelOutput[i]!;
          x0[i] = v;
          out[i] = a * sample[i]! + b * ((1 + k) * v - k * prev[i]!);
        }
      }
    }
    this.x0 = this.prevX0;
    this.prevX0 = x0;
    this.lastIndex = stepIndex;
    return out;
  }

  linearStep(stepIndex: number, first: boolean): LinearStep {
    const steps = this.timesteps.length;
    checkIndex(stepIndex, steps);
    const sigmaS = this.sigmas[stepIndex]!;
    const sigmaNext = this.sigmas[stepIndex + 1]!;
    const { alpha: aS, sigmaT: sS } = alphaSigma(sigmaS);
    const { alpha: aT, sigmaT: sT } = alphaSigma(sigmaNext);
    const eps = this.prediction === 'epsilon';
    const cx = eps ? 1 / aS : aS;
    const cm = eps ? -sS / aS : -sS;
    const keep = { keepX: cx, keepModel: cm, noise: 0 };
    if (sigmaNext === 0) return { x: cx, model: cm, prev: 0, ...keep };
    const h = Math.log(sigmaS / sigmaNext);
    const a = sT / sS;
    const b = -aT * Math.expm1(-h);
    if (first || (stepIndex === steps - 1 && this.firstOrderLast)) return { x: a + b * cx, model: b * cm, prev: 0, ...keep };
    const k = (0.5 * h) / Math.log(this.sigmas[stepIndex - 1]! / sigmaS);
    return { x: a + b * (1 + k) * cx, model: b * (1 + k) * cm, prev: -b * k, ...keep };
  }

  modelInputScale(): number {
    return 1;
  }

  addNoise(original: Float32Array, noise: Float32Array, stepIndex: number): Float32Array {
    checkIndex(stepIndex, this.timesteps.length);
    checkSameLength(original, noise, 'addNoise');
    const { alpha, sigmaT } = alphaSigma(this.sigmas[stepIndex]!);
    const out = new Float32Array(original.length);
    for (let i = 0; i < out.length; i++) out[i] = alpha * original[i]! + sigmaT * noise[i]!;
    return out;
  }
}
