import { describe, expect, it } from 'vitest';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import { parseCreateBody, type ParseResult } from '../../src/workflows/validate.ts';
import { minimalBody } from './helpers.ts';
import { mulberry32 as prng } from '../../src/util/mulberry32.ts';


const FIELD_NAMES = [
  'workflow', 'qrText', 'qrImage', 'qrContent', 'qrStrength', 'qrSteps', 'seed', 'negativePrompt', 'webhook', 'batchSize', 'prompt',
  'steps', 'cfg', 'model', 'enhance', 'aspectRatio', 'resolution', 'qrCodePartern', 'qrX', 'qrY', 'qrRatio', 'preset', 'image',
  'image_width', 'image_height', 'padding_left', 'padding_right', 'padding_top', 'padding_bottom', 'type', 'qrRepair', '__proto__', 'constructor', 'toString',
];

const STRINGS = [
  '', ' ', 'x', '1', '15', '1.5', '-1', 'NaN', 'face', 'SD', 'UltraHD', '16:9', 'anime', 'one_shot', 'multi_shots', 'https://example.com/a.png',
  'off', 'on_failure', 'always', 'http://127.0.0.1/hook', 'https://[::1]/', 'javascript:alert(1)', '\u0000', '\ud800', '😀'.repeat(400), 'a'.repeat(2100), '9'.repeat(3100),
  ...WORKFLOWS,
];

const NUMBERS = [0, -0, 1, -1, 0.5, 3, 3.0001, 4, 10, 20, 60, 64, 2048, 2049, 3840, 1e21, -1e21, 2 ** 53, 2 ** 53 - 1, Number.MIN_VALUE, Number.NaN, Number.POSITIVE_INFINITY];

function randomValue(rand: () => number, depth: number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const r = rand();
  if (depth > 3 || r < 0.2) return pick(NUMBERS);
  if (r < 0.25) return rand() * 1e6 - 5e5;
  if (r < 0.45) return pick(STRINGS);
  if (r < 0.5) return rand() < 0.5;
  if (r < 0.55) return null;
  if (r < 0.7) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  const obj: Record<string, unknown> = {};
  const n = Math.floor(rand() * 8);
  for (let i = 0; i < n; i++) {
    Object.defineProperty(obj, pick(FIELD_NAMES), { value: randomValue(rand, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return obj;
}

function assertWellFormed(body: unknown, result: ParseResult): void {
  if (result.ok) {
    expect(WORKFLOWS).toContain(result.value.workflow);
    expect(result.value.input.workflow).toBe(result.value.workflow);
    expect(Number.isSafeInteger(result.value.costCents) && result.value.costCents > 0).toBe(true);
    expect(result.value.imageCount >= 1 && result.value.imageCount <= 4).toBe(true);
    expect(Number.isSafeInteger(result.value.input.seed)).toBe(true);
    expect(() => JSON.stringify(result.value.input)).not.toThrow();
  } else {
    expect(result.issues.length, JSON.stringify(body)).toBeGreaterThan(0);
    for (const issue of result.issues) {
      expect(typeof issue.field).toBe('string');
      expect(typeof issue.rule).toBe('string');
      expect(issue.rule, JSON.stringify(body)).not.toBe('internal');
      expect(issue.message.length).toBeGreaterThan(0);
    }
  }
}

describe('parseCreateBody on random input', () => {
  it('never throws and always returns ok or a non-empty list of issues (1000 random JSON values)', () => {
    const rand = prng(20240601);
    for (let i = 0; i < 1000; i++) {
      const body = randomValue(rand, 0);
      let result: ParseResult | undefined;
      expect(() => { result = parseCreateBody(body, { allowPrivateUrls: rand() < 0.5 }); }, JSON.stringify(body)).not.toThrow();
      assertWellFormed(body, result!);
    }
  });

  it('never throws on valid bodies with 1 to 3 fields replaced by random values (1000 mutations)', () => {
    const rand = prng(7);
    let accepted = 0;
    for (let i = 0; i < 1000; i++) {
      const workflow = WORKFLOWS[Math.floor(rand() * WORKFLOWS.length)]!;
      const body: Record<string, unknown> = minimalBody(workflow);
      const n = 1 + Math.floor(rand() * 3);
      for (let k = 0; k < n; k++) {
        const field = FIELD_NAMES[Math.floor(rand() * FIELD_NAMES.length)]!;
        if (field === 'workflow' && rand() < 0.8) continue;
        Object.defineProperty(body, field, { value: randomValue(rand, 1), enumerable: true, writable: true, configurable: true });
      }
      let result: ParseResult | undefined;
      expect(() => { result = parseCreateBody(body, { allowPrivateUrls: rand() < 0.5 }); }, JSON.stringify(body)).not.toThrow();
      assertWellFormed(body, result!);
      if (result!.ok) accepted++;
    }
    // The mutations leave a fair share of bodies valid, so both branches are exercised.
    expect(accepted).toBeGreaterThan(100);
  });
});
