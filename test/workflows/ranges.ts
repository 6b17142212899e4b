import { expect } from 'vitest';
import type { WorkflowName } from '../../src/workflows/names.ts';
import { expectIssue, expectOk, parse, withField } from './helpers.ts';

/**
 * Checks an inclusive range on one field: min and max accepted (and echoed), min-1 and max+1
 * rejected with rules min / max; for integer fields a fraction is rejected with rule integer,
 * for float fields a value just outside is rejected and a fraction inside accepted.
 */
export function checkRange(
  workflow: WorkflowName,
  field: string,
  min: number,
  max: number,
  integer: boolean,
  extra: Record<string, unknown> = {},
): void {
  const body = (value: unknown) => ({ ...withField(workflow, field, value), ...extra });
  expect(expectOk(parse(body(min))).input[field]).toBe(min);
  expect(expectOk(parse(body(max))).input[field]).toBe(max);
  expect(expectIssue(parse(body(min - 1)), field, 'min').message).toContain(`at least ${min}`);
  expect(expectIssue(parse(body(max + 1)), field, 'max').message).toContain(`at most ${max}`);
  if (integer) {
    expectIssue(parse(body(min + 0.5)), field, 'integer');
  } else {
    expectIssue(parse(body(min - 0.01)), field, 'min');
    expectIssue(parse(body(max + 0.01)), field, 'max');
    const inside = Math.round(((min + max) / 2 + 0.123) * 1000) / 1000;
    expect(expectOk(parse(body(inside))).input[field]).toBe(inside);
  }
}
