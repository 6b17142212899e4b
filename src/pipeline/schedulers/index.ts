/** The sampler registry: name -> factory, with the SD1.5 defaults of design.md section 5. */
import { DdimScheduler } from './ddim.ts';
import { DpmSolverMultistepScheduler } from './dpmpp-2m-karras.ts';
import { EulerAncestralScheduler } from './euler-ancestral.ts';
import { lcmOriginalSteps, LcmScheduler } from './lcm.ts';
import { SD15_SCHEDULER_CONFIG } from './types.ts';
import type { Scheduler, SchedulerConfig, SchedulerName, TimestepSpacing } from './types.ts';

export * from './types.ts';
export { DdimScheduler } from './ddim.ts';
export { DpmSolverMultistepScheduler } from './dpmpp-2m-karras.ts';
export { EulerAncestralScheduler } from './euler-ancestral.ts';
export { LcmScheduler } from './lcm.ts';

export const SCHEDULER_NAMES: readonly SchedulerName[] = ['dpmpp_2m_karras', 'euler_a', 'ddim', 'lcm'];

const FACTORIES: Record<SchedulerName, (steps: number, config: SchedulerConfig) => Scheduler> = {
  dpmpp_2m_karras: (steps, config) => new DpmSolverMultistepScheduler(steps, config),
  euler_a: (steps, config) => new EulerAncestralScheduler(steps, config),
  ddim: (steps, config) => new DdimScheduler(steps, config),
  lcm: (steps, config) => new LcmScheduler(steps, config),
};

/** Spacing used when the caller names none; the rest follow the config (SD1.5: 'leading'). */
const DEFAULT_SPACING: Partial<Record<SchedulerName, TimestepSpacing>> = { euler_a: 'linspace' };

export function isSchedulerName(name: unknown): name is SchedulerName {
  return typeof name === 'string' && Object.hasOwn(FACTORIES, name);
}

/**
 * A fresh scheduler for one run of `steps` steps (schedulers keep per-run state: use one per
 * generation). `config` overrides SD15_SCHEDULER_CONFIG field by field.
 */
export function createScheduler(name: SchedulerName, steps: number, config: Partial<SchedulerConfig> = {}): Scheduler {
  if (!isSchedulerName(name)) throw new RangeError(`unknown scheduler: ${String(name)}`);
  const spacing = config.timestepSpacing ?? DEFAULT_SPACING[name] ?? SD15_SCHEDULER_CONFIG.timestepSpacing;
  return FACTORIES[name](steps, { ...SD15_SCHEDULER_CONFIG, ...config, timestepSpacing: spacing });
}

/**
 * The most steps `name` runs under `config`: LCM places its steps on originalInferenceSteps
 * training steps (diffusers refuses more), the others on the training timesteps.
 */
export function maxSteps(name: SchedulerName, config: Partial<SchedulerConfig> = {}): number {
  const merged = { ...SD15_SCHEDULER_CONFIG, ...config };
  return name === 'lcm' ? lcmOriginalSteps(merged) : merged.numTrainTimesteps;
}

/**
 * img2img: the step index the loop starts at for a strength in [0, 1], as diffusers' get_timesteps
 * does (strength 1 starts at 0; the loop runs steps - startIndex steps). Noise the clean latents
 * with scheduler.addNoise(latents, noise, startIndex) first; a result equal to `steps` means no step runs.
 */
export function img2imgStartIndex(steps: number, strength: number): number {
  if (!(strength >= 0 && strength <= 1)) throw new RangeError(`strength must lie in [0, 1], got ${strength}`);
  const initTimestep = Math.min(Math.floor(steps * strength), steps);
  return Math.max(steps - initTimestep, 0);
}
