/**
 * The training noise schedule and the timestep/sigma tables the samplers are built from, computed
 * the way diffusers computes them: torch float32 for the training tables, numpy for the spacings
 * (numpy's linspace/arange arithmetic and round-half-to-even), so rounded timesteps come out equal.
 */
import type { SchedulerConfig, TimestepSpacing } from './types.ts';

const f32 = Math.fround;

export interface TrainSchedule {
  /** alphas_cumprod per training timestep (float32 values, as torch stores them). */
  readonly alphasCumprod: Float64Array;
  /** sigma_t = sqrt((1 - acp) / acp) per training timestep, ascending (float32 values). */
  readonly sigmas: Float64Array;
  /** log(sigmas), ascending. */
  readonly logSigmas: Float64Array;
}

const scheduleCache = new Map<string, TrainSchedule>();

/** betas -> alphas_cumprod -> sigmas for a config; cached, since every scheduler instance needs one. */
export function trainSchedule(config: SchedulerConfig): TrainSchedule {
  const { numTrainTimesteps: n, betaStart, betaEnd, betaSchedule } = config;
  if (!Number.isInteger(n) || n < 2) throw new RangeError(`numTrainTimesteps must be an integer >= 2, got ${n}`);
  if (!(betaStart > 0 && betaEnd > 0 && betaStart < 1 && betaEnd < 1)) {
    throw new RangeError(`betaStart and betaEnd must lie in (0, 1), got ${betaStart}, ${betaEnd}`);
  }
  const key = `${n}|${betaStart}|${betaEnd}|${betaSchedule}`;
  const cached = scheduleCache.get(key);
  if (cached) return cached;

  let betas: Float64Array;
  if (betaSchedule === 'linear') {
    betas = torchLinspaceF32(betaStart, betaEnd, n);
  } else if (betaSchedule === 'scaled_linear') {
    betas = torchLinspaceF32(Math.sqrt(betaStart), Math.sqrt(betaEnd), n).map((b) => f32(b * b));
  } else {
    throw new RangeError(`unknown beta schedule: ${String(betaSchedule)}`);
  }
  const alphasCumprod = new Float64Array(n);
  const sigmas = new Float64Array(n);
  const logSigmas = new Float64Array(n);
  // torch.cumprod on CPU accumulates float32 inputs in double and stores float32.
  let acc = 1;
  for (let i = 0; i < n; i++) {
    acc *= f32(1 - betas[i]!);
    const acp = f32(acc);
    alphasCumprod[i] = acp;
    sigmas[i] = f32(Math.sqrt(f32(f32(1 - acp) / acp)));
    logSigmas[i] = f32(Math.log(sigmas[i]!));
  }
  const schedule: TrainSchedule = { alphasCumprod, sigmas, logSigmas };
  scheduleCache.set(key, schedule);
  return schedule;
}

/** torch.linspace(start, end, steps, dtype=float32) on CPU: halves filled from each end. */
function torchLinspaceF32(start: number, end: number, steps: number): Float64Array {
  const s = f32(start);
  const e = f32(end);
  const step = f32(f32(e - s) / (steps - 1));
  const half = Math.floor(steps / 2);
  const out = new Float64Array(steps);
  for (let i = 0; i < steps; i++) {
    out[i] = i < half ? f32(s + f32(step * i)) : f32(e - f32(step * (steps - i - 1)));
  }
  return out;
}

/** numpy.round: halves go to the even neighbour (Math.round would send 2.5 to 3). */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** numpy.linspace(start, stop, num, endpoint) in float64, element for element. */
export function npLinspace(start: number, stop: number, num: number, endpoint = true): number[] {
  if (num === 1) return [start];
  const div = endpoint ? num - 1 : num;
  const step = (stop - start) / div;
  const out: number[] = [];
  for (let i = 0; i < num; i++) out.push(i * step + start);
  if (endpoint && num > 1) out[num - 1] = stop;
  return out;
}

/** numpy.arange(start, stop, step) for floats: numpy fills start + i * ((start + step) - start). */
export function npArange(start: number, stop: number, step: number): number[] {
  const length = Math.max(0, Math.ceil((stop - start) / step));
  const out: number[] = [];
  if (length === 0) return out;
  out.push(start);
  if (length > 1) out.push(start + step);
  const delta = (start + step) - start;
  for (let i = 2; i < length; i++) out.push(start + i * delta);
  return out;
}

/**
 * The spaced timesteps, highest first. diffusers' schedulers disagree on details, hence `style`:
 * - 'ddim' (DDIM, Euler): leading = arange(steps) * (T // steps) + offset; linspace = linspace(0, T-1, steps);
 * - 'dpm' (DPMSolverMultistep): leading uses T // (steps + 1) over steps + 1 points, dropping 0;
 *   linspace takes steps + 1 points and drops the last.
 * `round` = false keeps Euler's fractional linspace timesteps.
 */
export function spacedTimesteps(
  spacing: TimestepSpacing,
  steps: number,
  numTrainTimesteps: number,
  stepsOffset: number,
  style: 'ddim' | 'dpm',
  round = true,
): number[] {
  const T = numTrainTimesteps;
  if (spacing === 'linspace') {
    const pts = style === 'dpm' ? npLinspace(0, T - 1, steps + 1).slice(1) : npLinspace(0, T - 1, steps);
    return pts.reverse().map((t) => (round ? roundHalfEven(t) : f32(t)));
  }
  if (spacing === 'leading') {
    const points = style === 'dpm' ? steps + 1 : steps;
    const ratio = Math.floor(T / points);
    const out: number[] = [];
    for (let i = points - 1; i >= points - steps; i--) out.push(i * ratio + stepsOffset);
    return out;
  }
  if (spacing === 'trailing') {
    return npArange(T, 0, -T / steps).map((t) => roundHalfEven(t) - 1);
  }
  throw new RangeError(`unknown timestep spacing: ${String(spacing)}`);
}

/** numpy.interp over the training sigmas at a (possibly fractional) timestep. */
export function sigmaAt(schedule: TrainSchedule, t: number): number {
  const s = schedule.sigmas;
  if (t <= 0) return s[0]!;
  if (t >= s.length - 1) return s[s.length - 1]!;
  const lo = Math.floor(t);
  const w = t - lo;
  const a = s[lo]!;
  const b = s[lo + 1]!;
  // numpy's interp form: slope * (x - xp[j]) + fp[j]
  return w === 0 ? a : (b - a) * w + a;
}

/** Karras et al. (2022) sigmas, rho = 7, from sigmaMax down to sigmaMin (float64, not yet rounded). */
export function karrasSigmas(sigmaMin: number, sigmaMax: number, steps: number, rho = 7): number[] {
  const minInv = sigmaMin ** (1 / rho);
  const maxInv = sigmaMax ** (1 / rho);
  return npLinspace(0, 1, steps).map((r) => (maxInv + r * (minInv - maxInv)) ** rho);
}

/** diffusers' _sigma_to_t: the fractional training timestep whose log-sigma matches (linear in log sigma). */
export function sigmaToT(sigma: number, schedule: TrainSchedule): number {
  const logs = schedule.logSigmas;
  const logSigma = Math.log(Math.max(sigma, 1e-10));
  // Last index whose log sigma is <= ours (0 if none), clipped so a neighbour above exists.
  let low = 0;
  for (let i = 0; i < logs.length; i++) if (logSigma - logs[i]! >= 0) low = i;
  low = Math.min(low, logs.length - 2);
  const lo = logs[low]!;
  const hi = logs[low + 1]!;
  const w = Math.min(1, Math.max(0, (lo - logSigma) / (lo - hi)));
  return (1 - w) * low + w * (low + 1);
}

/** VP view of an EDM-style sigma: x_t = alpha * x0 + sigma_t * eps with alpha = 1/sqrt(sigma^2+1). */
export function alphaSigma(sigma: number): { alpha: number; sigmaT: number } {
  const alpha = 1 / Math.sqrt(sigma * sigma + 1);
  return { alpha, sigmaT: sigma * alpha };
}

export function checkSteps(steps: number, max: number): void {
  if (!Number.isInteger(steps) || steps < 1 || steps > max) {
    throw new RangeError(`steps must be an integer in [1, ${max}], got ${steps}`);
  }
}

export function checkIndex(stepIndex: number, steps: number): void {
  if (!Number.isInteger(stepIndex) || stepIndex < 0 || stepIndex >= steps) {
    throw new RangeError(`stepIndex must be an integer in [0, ${steps - 1}], got ${stepIndex}`);
  }
}

export function checkSameLength(a: Float32Array, b: Float32Array, what: string): void {
  if (a.length !== b.length) throw new RangeError(`${what}: lengths differ (${a.length} vs ${b.length})`);
}
