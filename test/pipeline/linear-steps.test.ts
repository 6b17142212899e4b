/**
 * Every sampler's linearStep (the form the device-side step graph runs) against its own step():
 * the same trajectory over a whole run, the same noise draws, for eps and v prediction, from the
 * start (txt2img) and from a later step (img2img).
 */
import { describe, expect, it } from 'vitest';
import { GaussianStream } from '../../src/pipeline/random.ts';
import { createScheduler, SCHEDULER_NAMES, type SchedulerName } from '../../src/pipeline/schedulers/index.ts';

/** A smooth stand-in model: an output that depends on the sample and the step. */
const model = (x: Float32Array, i: number): Float32Array => Float32Array.from(x, (v, k) => Math.tanh(v * 0.7 + Math.sin(k + i) * 0.3));

function trajectories(name: SchedulerName, prediction: 'epsilon' | 'v_prediction', start: number) {
  const steps = 12;
  const n = 64;
  const init = new GaussianStream(5).noise(n);
  // step() path
  const a = createScheduler(name, steps, { predictionType: prediction });
  const noiseA = new GaussianStream(9);
  let x: Float32Array = Float32Array.from(init);
  for (let i = start; i < steps; i++) x = a.step(model(a.scaleModelInput(x, i), i), i, x, (m) => noiseA.noise(m));
  // linear path, in double precision, scaling the model input as scaleModelInput does
  const b = createScheduler(name, steps, { predictionType: prediction });
  const noiseB = new GaussianStream(9);
  let y = Array.from(init);
  let kept = new Array<number>(n).fill(0);
  for (let i = start; i < steps; i++) {
    const s = b.modelInputScale(i);
    const m = model(Float32Array.from(y, (v) => v * s), i);
    const c = b.linearStep(i, i === start)!;
    const z = c.noise !== 0 ? noiseB.noise(n) : undefined;
    const next = y.map((v, k) => c.x * v + c.model * m[k]! + c.prev * kept[k]! + (z ? c.noise * z[k]! : 0));
    kept = y.map((v, k) => c.keepX * v + c.keepModel * m[k]!);
    y = next;
  }
  return { step: x, linear: Float32Array.from(y) };
}

describe('linearStep reproduces step()', () => {
  for (const name of SCHEDULER_NAMES) {
    for (const prediction of ['epsilon', 'v_prediction'] as const) {
      for (const start of [0, 5]) {
        it(`${name}, ${prediction}, from step ${start}`, () => {
          const { step, linear } = trajectories(name, prediction, start);
          const scale = Math.max(...step.map(Math.abs));
          const diff = Math.max(...step.map((v, k) => Math.abs(v - linear[k]!)));
          expect(diff / scale).toBeLessThan(1e-5);
        });
      }
    }
  }

  it('scaleModelInput multiplies by modelInputScale', () => {
    for (const name of SCHEDULER_NAMES) {
      const s = createScheduler(name, 8);
      const x = Float32Array.of(1, -2, 3.5);
      for (let i = 0; i < 8; i++) expect(Array.from(s.scaleModelInput(x, i))).toEqual(Array.from(x, (v) => Math.fround(v * s.modelInputScale(i))));
    }
  });
});
