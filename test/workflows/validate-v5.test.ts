import { describe, expect, it } from 'vitest';
import { PRESETS } from '../../src/workflows/presets.ts';
import { ASPECT_RATIOS, outputSize, RESOLUTIONS } from '../../src/workflows/sizes.ts';
import { expectIssue, expectOk, FIXED_SEED, minimalBody, parse, V5_FAMILY, withField, without } from './helpers.ts';
import { checkRange } from './ranges.ts';

const V5 = 'generate_qr_art_v5';
const V5S = 'generate_qr_art_v5s';

describe('QR Art v5 and v5s', () => {
  it('v5 echoes every default, with the QR code centred on the 768x768 SD canvas', () => {
    const { input, imageCount, costCents } = expectOk(parse(minimalBody(V5)));
    // side = round(0.6 * 768) = 461; centred: floor((768 - 461) / 2) = 153
    expect(input).toEqual({
      workflow: V5,
      prompt: 'a castle on a hill',
      qrContent: 'https://example.com',
      seed: FIXED_SEED,
      steps: 30,
      qrStrength: 1.3,
      cfg: 7,
      model: 'universal',
      batchSize: 1,
      aspectRatio: '1:1',
      resolution: 'SD',
      qrCodePartern: 's1',
      qrX: 153,
      qrY: 153,
      qrRatio: 0.6,
    });
    expect(imageCount).toBe(1);
    expect(costCents).toBe(299);
  });

  it('v5s echoes its fast-tier defaults (steps 8, cfg 1)', () => {
    const { input } = expectOk(parse(minimalBody(V5S)));
    expect(input).toMatchObject({ workflow: V5S, steps: 8, cfg: 1, qrStrength: 1.3, model: 'universal', batchSize: 1, qrRatio: 0.6 });
  });

  it.each(V5_FAMILY)('%s omits enhance and preset when absent (no enhancement, no preset)', (workflow) => {
    const { input } = expectOk(parse(minimalBody(workflow)));
    expect(input).not.toHaveProperty('enhance');
    expect(input).not.toHaveProperty('preset');
    const nulls = expectOk(parse({ ...minimalBody(workflow), enhance: null, preset: null })).input;
    expect(nulls).not.toHaveProperty('enhance');
    expect(nulls).not.toHaveProperty('preset');
  });

  it.each(V5_FAMILY)('%s requires prompt and qrContent', (workflow) => {
    expect(expectIssue(parse(without(workflow, 'prompt')), 'prompt', 'required').message).toBe('prompt is required');
    // A v4 body's qrText is named, as what this workflow does not read.
    expect(expectIssue(parse({ ...without(workflow, 'prompt'), qrText: 'a castle' }), 'prompt', 'required').message).toBe(
      `prompt is required: ${workflow} reads prompt, not qrText (which it ignores)`,
    );
    expectIssue(parse(without(workflow, 'qrContent')), 'qrContent', 'required');
    expectIssue(parse(withField(workflow, 'prompt', '')), 'prompt', 'required');
    expectIssue(parse(withField(workflow, 'prompt', ['a'])), 'prompt', 'type');
  });

  it.each(V5_FAMILY)('%s does not take qrText as the prompt, and drops qrText, qrSteps and qrImage', (workflow) => {
    const body = { workflow, qrText: 'a castle', qrContent: 'x' };
    expectIssue(parse(body), 'prompt', 'required');
    const { input } = expectOk(parse({ ...minimalBody(workflow), qrText: 'x', qrSteps: 15, qrImage: 'https://e.com/q.png', type: 'one_shot' }));
    for (const key of ['qrText', 'qrSteps', 'qrImage', 'type']) expect(input).not.toHaveProperty(key);
  });

  it('checks the v5 ranges: steps 10..60, cfg 1..20, qrStrength 0..3, batchSize 1..4, qrRatio 0.3..1', () => {
    checkRange(V5, 'steps', 10, 60, true);
    checkRange(V5, 'cfg', 1, 20, false);
    checkRange(V5, 'qrStrength', 0, 3, false);
    checkRange(V5, 'batchSize', 1, 4, true);
    checkRange(V5, 'qrRatio', 0.3, 1, false);
  });

  it("checks the v5s ranges: v5's steps and cfg plus the tier's smaller ones (steps 4..60, cfg 1..20), qrStrength 0..3, batchSize 1..4, qrRatio 0.3..1", () => {
    checkRange(V5S, 'steps', 4, 60, true);
    checkRange(V5S, 'cfg', 1, 20, false);
    checkRange(V5S, 'qrStrength', 0, 3, false);
    checkRange(V5S, 'batchSize', 1, 4, true);
    checkRange(V5S, 'qrRatio', 0.3, 1, false);
  });

  it('v5s accepts the body a client sends to v5 (steps 25, cfg 7), echoes what was asked and keeps its own price', () => {
    const body = { prompt: 'a koi pond', qrContent: 'https://example.com', steps: 25, cfg: 7, aspectRatio: '16:9', resolution: 'HD', batchSize: 2 };
    const v5 = expectOk(parse({ workflow: V5, ...body }));
    const v5s = expectOk(parse({ workflow: V5S, ...body }));
    // The echo keeps what the client asked; the worker clamps it when the job runs (samplingFor).
    expect(v5s.input).toEqual({ ...v5.input, workflow: V5S });
    expect(v5s.input).toMatchObject({ steps: 25, cfg: 7 });
    // The price depends on resolution, enhance and batchSize, never on steps or cfg.
    expect(v5s.costCents).toBe(expectOk(parse({ workflow: V5S, ...body, steps: 8, cfg: 1.5 })).costCents);
    expect(v5s.costCents).toBe(224 * 2);
    expect(v5.costCents).toBe(449 * 2);
  });

  it('v5s still accepts the few steps v5 does not (4..9), and both refuse what v5 refuses above', () => {
    expect(expectOk(parse(withField(V5S, 'steps', 4))).input.steps).toBe(4);
    expectIssue(parse(withField(V5, 'steps', 9)), 'steps', 'min');
    for (const workflow of V5_FAMILY) {
      expectIssue(parse(withField(workflow, 'steps', 61)), 'steps', 'max');
      expectIssue(parse(withField(workflow, 'cfg', 20.5)), 'cfg', 'max');
    }
  });

  it('accepts every value of each enum and rejects a near miss', () => {
    const enums: Record<string, readonly string[]> = {
      model: ['universal', 'niji', 'dream', 'real'],
      enhance: ['face'],
      aspectRatio: ['1:1', '3:4', '4:3', '9:16', '16:9'],
      resolution: ['SD', 'HD', 'FullHD', 'UltraHD'],
      qrCodePartern: ['s1', 's2', 's3', 'rd1', 'rd2', 'rd3', 'd1', 'd2', 'd3', 'r1', 'r2', 'r3', 'c1', 'c2', 'c3', 'sq1', 'sq2', 'sq3'],
    };
    for (const workflow of V5_FAMILY) {
      for (const [field, values] of Object.entries(enums)) {
        for (const value of values) expect(expectOk(parse(withField(workflow, field, value))).input[field]).toBe(value);
      }
    }
    const nearMisses: Array<[string, unknown]> = [
      ['model', 'Universal'], ['model', 'anime'], ['enhance', 'faces'], ['enhance', true], ['aspectRatio', '1:2'],
      ['aspectRatio', '16/9'], ['resolution', 'fullhd'], ['resolution', '4K'], ['qrCodePartern', 's4'], ['qrCodePartern', 'S1'],
    ];
    for (const [field, value] of nearMisses) {
      const issue = expectIssue(parse(withField(V5, field, value)), field, typeof value === 'string' ? 'enum' : 'type');
      if (typeof value === 'string') expect(issue.message).toContain(enums[field]![0]);
    }
  });

  it('suggests the right spelling for a case-only miss', () => {
    expect(expectIssue(parse(withField(V5, 'resolution', 'fullhd')), 'resolution', 'enum').message).toContain('did you mean "FullHD"');
  });

  it('does not accept the old qrCodePattern spelling in place of qrCodePartern', () => {
    const { input } = expectOk(parse(withField(V5, 'qrCodePattern', 'c2')));
    expect(input.qrCodePartern).toBe('s1');
    expect(input).not.toHaveProperty('qrCodePattern');
  });

  it('accepts every preset name of spec 4.4, spelled exactly', () => {
    for (const workflow of V5_FAMILY) {
      for (const preset of PRESETS) expect(expectOk(parse(withField(workflow, 'preset', preset))).input.preset).toBe(preset);
    }
  });

  it('rejects near-miss preset names', () => {
    for (const near of ['Anime', 'analog-film', 'analog_film', 'artstyle-art-deco', 'anime ', 'game-gta5', 'photo', '']) {
      const issue = expectIssue(parse(withField(V5, 'preset', near)), 'preset', 'enum');
      expect(issue.message).toContain('preset must be one of the 102');
    }
    expect(expectIssue(parse(withField(V5, 'preset', 'Analog Film')), 'preset', 'enum').message).toContain('did you mean "analog film"');
  });

  it('prices enhance=face per image', () => {
    expect(expectOk(parse(withField(V5, 'enhance', 'face'))).costCents).toBe(349);
  });
});

describe('v5 QR placement (qrX / qrY / qrRatio)', () => {
  it('centres the code on every output size and keeps it inside the canvas', () => {
    for (const aspectRatio of ASPECT_RATIOS) {
      for (const resolution of RESOLUTIONS) {
        for (const qrRatio of [0.3, 0.6, 0.77, 1]) {
          const { input } = expectOk(parse({ ...minimalBody(V5), aspectRatio, resolution, qrRatio }));
          const { width, height } = outputSize(aspectRatio, resolution);
          const side = Math.round(qrRatio * Math.min(width, height));
          expect(input.qrX).toBe(Math.floor((width - side) / 2));
          expect(input.qrY).toBe(Math.floor((height - side) / 2));
          expect(input.qrX as number).toBeGreaterThanOrEqual(0);
          expect((input.qrX as number) + side).toBeLessThanOrEqual(width);
          expect((input.qrY as number) + side).toBeLessThanOrEqual(height);
        }
      }
    }
  });

  it('accepts 0 and width - side, and rejects -1 and width - side + 1 (1:1 SD, qrRatio 0.6: side 461)', () => {
    for (const field of ['qrX', 'qrY']) {
      expect(expectOk(parse(withField(V5, field, 0))).input[field]).toBe(0);
      expect(expectOk(parse(withField(V5, field, 307))).input[field]).toBe(307);
      expectIssue(parse(withField(V5, field, -1)), field, 'min');
      const issue = expectIssue(parse(withField(V5, field, 308)), field, 'canvas_bounds');
      expect(issue.message).toContain('between 0 and 307');
      expect(issue.message).toContain('768x768');
      expectIssue(parse(withField(V5, field, 10.5)), field, 'integer');
      expectIssue(parse(withField(V5, field, '10')), field, 'type');
    }
  });

  it('uses the requested size and ratio for the bounds (16:9 UltraHD, qrRatio 1: side 2160)', () => {
    const base = { ...minimalBody(V5), aspectRatio: '16:9', resolution: 'UltraHD', qrRatio: 1 };
    expect(expectOk(parse({ ...base, qrX: 1680, qrY: 0 })).input).toMatchObject({ qrX: 1680, qrY: 0 });
    expectIssue(parse({ ...base, qrX: 1681 }), 'qrX', 'canvas_bounds');
    expect(expectIssue(parse({ ...base, qrY: 1 }), 'qrY', 'canvas_bounds').message).toContain('between 0 and 0');
  });

  it('centres only the coordinate that is absent', () => {
    const { input } = expectOk(parse({ ...minimalBody(V5), aspectRatio: '9:16', qrX: 0 }));
    // 576x1024, side round(0.6 * 576) = 346: qrY = floor((1024 - 346) / 2) = 339
    expect(input).toMatchObject({ qrX: 0, qrY: 339 });
  });

  it('skips the canvas check while the size fields are themselves invalid', () => {
    const result = parse({ ...minimalBody(V5), resolution: '8K', qrX: 5000 });
    const issues = !result.ok ? result.issues : [];
    expect(issues.map((i) => `${i.field}/${i.rule}`).sort()).toEqual(['qrX/max', 'resolution/enum']);
  });

  it('refuses a code too dense for its square: whole-pixel modules need the content to fit (module_size on qrRatio)', () => {
    // 9:16 SD is 576 wide; qrRatio 0.3 gives a 173 px square. 1273 bytes (the most level H holds) need version 40
    // (177 modules + 2 x 2 quiet): 181 px at one pixel per module.
    const dense = { ...minimalBody(V5), aspectRatio: '9:16', qrRatio: 0.3, qrContent: 'x'.repeat(1273) };
    const issue = expectIssue(parse(dense), 'qrRatio', 'module_size');
    expect(issue.message).toContain('181 modules');
    expect(issue.message).toContain('173 px');
    expectOk(parse({ ...dense, qrRatio: 0.32 })); // 184 px: one-pixel modules fit
    expectOk(parse({ ...dense, qrContent: 'https://example.com' }));
  });
});
