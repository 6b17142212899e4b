/**
 * v5s takes a v5 body: what its few-step sampler runs for the steps and cfg a request asks
 * (samplingFor), and that the worker's settings use it while the input keeps what was asked.
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadManifest, type Manifest } from '../../src/pipeline/manifest.ts';
import { settingsFor } from '../../src/worker/diffusion-runner.ts';
import { createScheduler } from '../../src/pipeline/schedulers/index.ts';
import { catalogue, samplingFor, type QrV5Entry } from '../../src/workflows/catalogue.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';

const v5 = catalogue.generate_qr_art_v5 as QrV5Entry;
const v5s = catalogue.generate_qr_art_v5s as QrV5Entry;

describe('samplingFor', () => {
  it('v5 runs every accepted steps and cfg as asked', () => {
    for (const steps of [10, 25, 30, 60]) {
      for (const cfg of [1, 3.5, 7, 20]) expect(samplingFor(v5, { steps, cfg })).toEqual({ steps, cfg });
    }
  });

  it('v5s runs its own range as asked and clamps larger values to 12 steps, cfg 3', () => {
    expect(samplingFor(v5s, { steps: 8, cfg: 1.5 })).toEqual({ steps: 8, cfg: 1.5 });
    expect(samplingFor(v5s, { steps: 4, cfg: 1 })).toEqual({ steps: 4, cfg: 1 });
    expect(samplingFor(v5s, { steps: 12, cfg: 3 })).toEqual({ steps: 12, cfg: 3 });
    expect(samplingFor(v5s, { steps: 25, cfg: 7 })).toEqual({ steps: 12, cfg: 3 });
    expect(samplingFor(v5s, { steps: 60, cfg: 20 })).toEqual({ steps: 12, cfg: 3 });
  });

  it('v5s never runs fewer steps or less guidance for a larger value, over everything it accepts', () => {
    const { steps, cfg } = v5s.params;
    let last = { steps: 0, cfg: 0 };
    for (let s = steps.min; s <= steps.max; s++) {
      const c = cfg.min + ((cfg.max - cfg.min) * (s - steps.min)) / (steps.max - steps.min);
      const ran = samplingFor(v5s, { steps: s, cfg: c });
      expect(ran.steps).toBeGreaterThanOrEqual(last.steps);
      expect(ran.cfg).toBeGreaterThanOrEqual(last.cfg);
      expect(Number.isInteger(ran.steps)).toBe(true);
      expect(ran.steps).toBeLessThanOrEqual(v5s.sampling.steps.max);
      expect(ran.cfg).toBeLessThanOrEqual(v5s.sampling.cfg.max);
      last = ran;
    }
  });

  it('v5s accepts all that v5 accepts, and its defaults are inside what it runs', () => {
    expect(v5s.params.steps.min).toBeLessThanOrEqual(v5.params.steps.min);
    expect(v5s.params.steps.max).toBe(v5.params.steps.max);
    expect(v5s.params.cfg.min).toBeLessThanOrEqual(v5.params.cfg.min);
    expect(v5s.params.cfg.max).toBe(v5.params.cfg.max);
    expect(samplingFor(v5s, { steps: v5s.params.steps.default, cfg: v5s.params.cfg.default })).toEqual({ steps: 8, cfg: 1 });
  });
});

describe("the worker's settings for a v5 body sent to v5s", () => {
  let manifest: Manifest;
  beforeAll(async () => {
    manifest = await loadManifest(path.resolve(import.meta.dirname, '../../models/manifest.json'));
  });

  const settings = (body: Record<string, unknown>) => {
    const parsed = parseCreateBody(body, { allowPrivateUrls: false, randomSeed: () => 7 });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    return { input: parsed.value.input, run: settingsFor(manifest, parsed.value.workflow as 'generate_qr_art_v5s', parsed.value.input, parsed.value.imageCount) };
  };
  const body = { prompt: 'a koi pond', qrContent: 'https://example.com', steps: 25, cfg: 7 };

  it('samples with the LCM scheduler at 12 steps and guidance 3 while the input keeps 25 and 7', () => {
    const { input, run } = settings({ workflow: 'generate_qr_art_v5s', ...body });
    expect(input).toMatchObject({ steps: 25, cfg: 7 });
    expect(run).toMatchObject({ workflow: 'generate_qr_art_v5s', scheduler: 'lcm', steps: 12, guidance: 3 });
  });

  it('runs the same body on v5 as asked', () => {
    expect(settings({ workflow: 'generate_qr_art_v5', ...body }).run).toMatchObject({ steps: 25, guidance: 7 });
  });

  it('runs a v5s body that was valid before exactly as before', () => {
    expect(settings({ workflow: 'generate_qr_art_v5s', prompt: 'p', qrContent: 'c', steps: 6, cfg: 2.5 }).run).toMatchObject({ steps: 6, guidance: 2.5 });
    expect(settings({ workflow: 'generate_qr_art_v5s', prompt: 'p', qrContent: 'c' }).run).toMatchObject({ steps: 8, guidance: 1 });
  });

  it('v4s, which runs LCM, accepts qrSteps up to 60 as the spec says and runs at most the 50 steps LCM takes', () => {
    const v4s = (qrSteps: number) => {
      const parsed = parseCreateBody({ workflow: 'generate_qr_art_v4s', qrText: 'a harbour', qrContent: 'https://example.com', qrSteps }, { allowPrivateUrls: false, randomSeed: () => 7 });
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
      return { input: parsed.value.input, run: settingsFor(manifest, 'generate_qr_art_v4s', parsed.value.input, parsed.value.imageCount) };
    };
    expect(v4s(40).run).toMatchObject({ scheduler: 'lcm', steps: 40 });
    expect(v4s(50).run.steps).toBe(50);
    const most = v4s(60);
    expect(most.input).toMatchObject({ qrSteps: 60 });
    expect(most.run.steps).toBe(50);
    // What the worker then builds: a scheduler that takes it (60 would throw).
    const config = manifest.models['demo-sd15']!.scheduler.config;
    expect(createScheduler('lcm', most.run.steps, config).timesteps).toHaveLength(50);
    expect(() => createScheduler('lcm', 60, config)).toThrow(RangeError);
  });
});
