import { describe, expect, it } from 'vitest';
import {
  catalogue,
  isWorkflowName,
  LIMITS,
  subjectTokenFor,
  workflowForSubjectToken,
} from '../../src/workflows/catalogue.ts';
import { centsToCredits, costCentsFor } from '../../src/workflows/pricing.ts';
import { QR_WORKFLOWS, WORKFLOWS } from '../../src/workflows/names.ts';
import { isPresetName, PRESETS } from '../../src/workflows/presets.ts';
import { ASPECT_RATIOS, MAX_OUTPUT_AREA, MAX_OUTPUT_SIDE, OUTPUT_SIZES, outputSize, RESOLUTIONS } from '../../src/workflows/sizes.ts';

describe('workflow names', () => {
  it('lists the twelve QR workflows of spec section 9 in version order, then outpainting', () => {
    expect(QR_WORKFLOWS).toEqual([
      'generate_qr_art', 'generate_qr_art_v1.1', 'generate_qr_art_v2', 'generate_qr_art_v3a', 'generate_qr_art_v3b',
      'generate_qr_art_v4', 'generate_qr_art_v4s', 'generate_qr_art_v4real', 'generate_qr_art_v4niji', 'generate_qr_art_v4dream',
      'generate_qr_art_v5', 'generate_qr_art_v5s',
    ]);
    expect(WORKFLOWS).toEqual([...QR_WORKFLOWS, 'outpainting']);
  });

  it('recognises exactly the workflow names', () => {
    for (const name of WORKFLOWS) expect(isWorkflowName(name)).toBe(true);
    for (const other of ['', 'generate_qr_art_v6', 'GENERATE_QR_ART', 'toString', 'constructor', '__proto__', 5, null, undefined]) {
      expect(isWorkflowName(other)).toBe(false);
    }
  });
});

describe('catalogue', () => {
  it('has one entry per workflow, keyed by its name', () => {
    expect(Object.keys(catalogue).sort()).toEqual([...WORKFLOWS].sort());
    for (const name of WORKFLOWS) expect(catalogue[name].name).toBe(name);
  });

  it('assigns each workflow its family', () => {
    const families = Object.fromEntries(WORKFLOWS.map((n) => [n, catalogue[n].family]));
    expect(families).toEqual({
      generate_qr_art: 'qr-image',
      'generate_qr_art_v1.1': 'qr-image',
      generate_qr_art_v2: 'qr-image',
      generate_qr_art_v3a: 'qr-image',
      generate_qr_art_v3b: 'qr-image',
      generate_qr_art_v4: 'qr-content',
      generate_qr_art_v4s: 'qr-content',
      generate_qr_art_v4real: 'qr-content',
      generate_qr_art_v4niji: 'qr-content',
      generate_qr_art_v4dream: 'qr-content',
      generate_qr_art_v5: 'qr-v5',
      generate_qr_art_v5s: 'qr-v5',
      outpainting: 'outpainting',
    });
  });

  it('gives NATS-safe, unique subject tokens that map back to the workflow', () => {
    const tokens = WORKFLOWS.map((n) => catalogue[n].subjectToken);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(catalogue['generate_qr_art_v1.1'].subjectToken).toBe('generate_qr_art_v1_1');
    expect(catalogue.generate_qr_art_v4.subjectToken).toBe('generate_qr_art_v4');
    for (const name of WORKFLOWS) expect(workflowForSubjectToken(catalogue[name].subjectToken)?.name).toBe(name);
    expect(workflowForSubjectToken('nope')).toBeUndefined();
    expect(subjectTokenFor('a.b c*>')).toBe('a_b_c__');
  });

  it('has a description for every workflow', () => {
    for (const name of WORKFLOWS) expect(catalogue[name].description.length).toBeGreaterThan(10);
  });

  it('does not let v4 accept qrSteps while the other v4 variants take 10..60 default 20', () => {
    const v4 = catalogue.generate_qr_art_v4;
    if (v4.family !== 'qr-content') throw new Error('family');
    expect(v4.params.qrSteps).toBeNull();
    expect(v4.defaults).not.toHaveProperty('qrSteps');
    for (const name of ['generate_qr_art_v4s', 'generate_qr_art_v4real', 'generate_qr_art_v4niji', 'generate_qr_art_v4dream'] as const) {
      const e = catalogue[name];
      if (e.family !== 'qr-content') throw new Error('family');
      expect(e.params.qrSteps).toMatchObject({ min: 10, max: 60, default: 20 });
    }
  });

  it('keeps the shared limits', () => {
    expect(LIMITS.seed).toMatchObject({ min: 0, max: 9007199254740991 });
    expect(LIMITS.textMaxLength).toBe(2000);
    expect(LIMITS.urlMaxLength).toBe(2048);
  });

  it('converts integer cents to credits', () => {
    expect(centsToCredits(249)).toBe(2.49);
    expect(centsToCredits(100)).toBe(1);
  });

  it('prices v5 resolutions with integer rounding half up', () => {
    const v5 = catalogue.generate_qr_art_v5;
    expect(costCentsFor(v5, { resolution: 'HD' })).toBe(449); // 299 x 1.5 = 448.5
    const v5s = catalogue.generate_qr_art_v5s;
    expect(costCentsFor(v5s, { resolution: 'HD' })).toBe(224); // 149 x 1.5 = 223.5
  });
});

describe('presets', () => {
  it('lists the 102 preset names of spec 4.4 exactly, without duplicates', () => {
    expect(PRESETS.length).toBe(102);
    expect(new Set(PRESETS).size).toBe(102);
    for (const name of ['3d-model', 'analog film', 'ads-fashion editorial', 'artstyle-art deco', 'futuristic-sci-fi',
      'game-rpg fantasy game', 'papercraft-thick layered papercut', 'photo-tilt-shift', 'misc-zentangle', 'enhance']) {
      expect(isPresetName(name)).toBe(true);
    }
    expect(PRESETS[0]).toBe('3d-model');
    expect(PRESETS[PRESETS.length - 1]).toBe('misc-zentangle');
    for (const name of PRESETS) expect(name).toBe(name.trim());
  });

  it('matches case- and spacing-sensitively', () => {
    for (const near of ['Anime', 'analog-film', 'analog  film', '3D-model', 'artstyle-art-deco', ' anime', '']) {
      expect(isPresetName(near)).toBe(false);
    }
  });
});

describe('output sizes', () => {
  it('follows the table of spec 4.1.3', () => {
    const table = Object.fromEntries(
      ASPECT_RATIOS.map((a) => [a, RESOLUTIONS.map((r) => `${outputSize(a, r).width}x${outputSize(a, r).height}`).join(' ')]),
    );
    expect(table).toEqual({
      '1:1': '768x768 960x960 1440x1440 2880x2880',
      '3:4': '672x896 840x1120 1248x1664 2592x3456',
      '4:3': '896x672 1120x840 1664x1248 3456x2592',
      '9:16': '576x1024 720x1280 1080x1920 2160x3840',
      '16:9': '1024x576 1280x720 1920x1080 3840x2160',
    });
  });

  it('reads the 4:3 UltraHD typo "3456x292" as 3456x2592, the transpose of 3:4 UltraHD', () => {
    expect(outputSize('4:3', 'UltraHD')).toEqual({ width: 3456, height: 2592 });
    for (const r of RESOLUTIONS) {
      expect(OUTPUT_SIZES['4:3'][r]).toEqual({ width: OUTPUT_SIZES['3:4'][r].height, height: OUTPUT_SIZES['3:4'][r].width });
    }
  });

  it('derives the largest side and area from the table', () => {
    expect(MAX_OUTPUT_SIDE).toBe(3840);
    expect(MAX_OUTPUT_AREA).toBe(3456 * 2592);
  });

  it('throws on a value outside the table', () => {
    expect(() => outputSize('2:1' as never, 'SD')).toThrow(RangeError);
    expect(() => outputSize('1:1', '8K' as never)).toThrow(RangeError);
  });
});
