import { expect } from 'vitest';
import type { WorkflowName } from '../../src/workflows/names.ts';
import { parseCreateBody, type ParsedPrediction, type ParseResult, type ValidateOptions, type ValidationIssue } from '../../src/workflows/validate.ts';

export const FIXED_SEED = 1234567;
export const OPTIONS: ValidateOptions = { allowPrivateUrls: false, randomSeed: () => FIXED_SEED };
export const DEV_OPTIONS: ValidateOptions = { allowPrivateUrls: true, randomSeed: () => FIXED_SEED };

export const V1_FAMILY = ['generate_qr_art', 'generate_qr_art_v1.1', 'generate_qr_art_v2', 'generate_qr_art_v3a', 'generate_qr_art_v3b'] as const;
export const V4_FAMILY = ['generate_qr_art_v4', 'generate_qr_art_v4s', 'generate_qr_art_v4real', 'generate_qr_art_v4niji', 'generate_qr_art_v4dream'] as const;
export const V4_WITH_STEPS = ['generate_qr_art_v4s', 'generate_qr_art_v4real', 'generate_qr_art_v4niji', 'generate_qr_art_v4dream'] as const;
export const V5_FAMILY = ['generate_qr_art_v5', 'generate_qr_art_v5s'] as const;

/** The smallest valid body of each workflow (required fields only). */
export function minimalBody(workflow: WorkflowName): Record<string, unknown> {
  switch (workflow) {
    case 'generate_qr_art':
    case 'generate_qr_art_v1.1':
    case 'generate_qr_art_v2':
    case 'generate_qr_art_v3a':
    case 'generate_qr_art_v3b':
      return { workflow, qrText: 'a castle on a hill', qrImage: 'https://example.com/qr.png' };
    case 'generate_qr_art_v4':
    case 'generate_qr_art_v4s':
    case 'generate_qr_art_v4real':
    case 'generate_qr_art_v4niji':
    case 'generate_qr_art_v4dream':
      return { workflow, qrText: 'a castle on a hill', qrContent: 'https://example.com' };
    case 'generate_qr_art_v5':
    case 'generate_qr_art_v5s':
      return { workflow, prompt: 'a castle on a hill', qrContent: 'https://example.com' };
    case 'outpainting':
      return {
        workflow,
        image: 'https://example.com/photo.jpg',
        image_width: 512,
        image_height: 512,
        padding_left: 128,
        padding_right: 128,
        padding_top: 0,
        padding_bottom: 0,
        type: 'one_shot',
      };
  }
}

export function parse(body: unknown, options: ValidateOptions = OPTIONS): ParseResult {
  return parseCreateBody(body, options);
}

export function expectOk(result: ParseResult): ParsedPrediction {
  if (!result.ok) throw new Error(`expected ok, got issues: ${JSON.stringify(result.issues)}`);
  return result.value;
}

export function expectIssues(result: ParseResult): ValidationIssue[] {
  if (result.ok) throw new Error(`expected issues, got ok: ${JSON.stringify(result.value)}`);
  expect(result.issues.length).toBeGreaterThan(0);
  return result.issues;
}

/** Asserts the body is rejected with an issue on `field` with `rule`; returns that issue. */
export function expectIssue(result: ParseResult, field: string, rule: string): ValidationIssue {
  const issues = expectIssues(result);
  const hit = issues.find((i) => i.field === field && i.rule === rule);
  if (!hit) throw new Error(`expected issue ${field}/${rule}, got ${JSON.stringify(issues)}`);
  return hit;
}

export function withField(workflow: WorkflowName, field: string, value: unknown): Record<string, unknown> {
  return { ...minimalBody(workflow), [field]: value };
}

export function without(workflow: WorkflowName, field: string): Record<string, unknown> {
  const body = minimalBody(workflow);
  delete body[field];
  return body;
}
