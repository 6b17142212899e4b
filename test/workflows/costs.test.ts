import { describe, expect, it } from 'vitest';
import type { WorkflowName } from '../../src/workflows/names.ts';
import { RESOLUTIONS } from '../../src/workflows/sizes.ts';
import { expectOk, minimalBody, parse } from './helpers.ts';

const cost = (workflow: WorkflowName, extra: Record<string, unknown> = {}) => expectOk(parse({ ...minimalBody(workflow), ...extra }));

describe('costs in integer cents (hundredths of a credit)', () => {
  it('charges the flat price of v1 to v3b, one image each', () => {
    const prices: Array<[WorkflowName, number]> = [
      ['generate_qr_art', 100], ['generate_qr_art_v1.1', 100], ['generate_qr_art_v2', 150], ['generate_qr_art_v3a', 200], ['generate_qr_art_v3b', 200],
    ];
    for (const [workflow, cents] of prices) {
      expect(cost(workflow)).toMatchObject({ costCents: cents, imageCount: 1 });
      expect(cost(workflow, { batchSize: 4 })).toMatchObject({ costCents: cents, imageCount: 1 });
    }
  });

  it('charges v4, v4real, v4niji, v4dream 2.49 per image whatever the steps, and v4s 1.00 per image', () => {
    const prices: Array<[WorkflowName, number]> = [
      ['generate_qr_art_v4', 249], ['generate_qr_art_v4real', 249], ['generate_qr_art_v4niji', 249], ['generate_qr_art_v4dream', 249], ['generate_qr_art_v4s', 100],
    ];
    for (const [workflow, cents] of prices) {
      for (const batchSize of [1, 2, 3, 4]) {
        expect(cost(workflow, { batchSize })).toMatchObject({ costCents: cents * batchSize, imageCount: batchSize });
      }
      if (workflow !== 'generate_qr_art_v4') {
        expect(cost(workflow, { qrSteps: 10 }).costCents).toBe(cents);
        expect(cost(workflow, { qrSteps: 60 }).costCents).toBe(cents);
      }
    }
  });

  it('charges v5 2.99 per image at SD times the resolution factor, plus 0.50 per image for enhance=face', () => {
    const perImage = { SD: 299, HD: 449, FullHD: 598, UltraHD: 1196 };
    for (const resolution of RESOLUTIONS) {
      for (const batchSize of [1, 2, 3, 4]) {
        expect(cost('generate_qr_art_v5', { resolution, batchSize }).costCents).toBe(perImage[resolution] * batchSize);
        expect(cost('generate_qr_art_v5', { resolution, batchSize, enhance: 'face' }).costCents).toBe((perImage[resolution] + 50) * batchSize);
      }
    }
  });

  it('charges v5s 1.49 per image at SD with the same factors and surcharge', () => {
    const perImage = { SD: 149, HD: 224, FullHD: 298, UltraHD: 596 };
    for (const resolution of RESOLUTIONS) {
      for (const batchSize of [1, 4]) {
        expect(cost('generate_qr_art_v5s', { resolution, batchSize }).costCents).toBe(perImage[resolution] * batchSize);
        expect(cost('generate_qr_art_v5s', { resolution, batchSize, enhance: 'face' }).costCents).toBe((perImage[resolution] + 50) * batchSize);
      }
    }
  });

  it('charges outpainting 2.00 for one_shot and 4.00 for multi_shots', () => {
    expect(cost('outpainting', { type: 'one_shot' })).toMatchObject({ costCents: 200, imageCount: 1 });
    expect(cost('outpainting', { type: 'multi_shots' })).toMatchObject({ costCents: 400, imageCount: 1 });
  });

  it('always yields an integer number of cents', () => {
    for (const resolution of RESOLUTIONS) {
      for (const workflow of ['generate_qr_art_v5', 'generate_qr_art_v5s'] as const) {
        expect(Number.isInteger(cost(workflow, { resolution, batchSize: 3, enhance: 'face' }).costCents)).toBe(true);
      }
    }
  });
});
