import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogue, QR_REPAIR_MODES } from '../../src/workflows/catalogue.ts';
import { repairModeFor } from '../../src/workflows/control.ts';
import { QR_WORKFLOWS } from '../../src/workflows/names.ts';
import { requestSchemas } from '../../src/workflows/schemas.ts';
import { expectIssue, expectOk, minimalBody, parse, V1_FAMILY, V4_FAMILY, V5_FAMILY, withField } from './helpers.ts';

const RENDERED = [...V4_FAMILY, ...V5_FAMILY];

describe('qrRepair: the scan-repair level of a QR request', () => {
  it('defaults to on_failure for every QR workflow in the catalogue: v1-v3b too (the worker locates the client code image), v4 and later', () => {
    for (const workflow of [...V1_FAMILY, ...RENDERED]) expect(catalogue[workflow]).toMatchObject({ qrRepair: 'on_failure' });
    expect(catalogue.outpainting).not.toHaveProperty('qrRepair');
  });

  it.each(QR_WORKFLOWS)('%s accepts every level and echoes it as sent', (workflow) => {
    for (const level of QR_REPAIR_MODES) {
      const { input } = expectOk(parse(withField(workflow, 'qrRepair', level)));
      expect(input.qrRepair).toBe(level);
      expect(repairModeFor(workflow, input)).toBe(level);
    }
  });

  it.each(QR_WORKFLOWS)('%s leaves an absent qrRepair out of the echo and resolves it to the workflow default', (workflow) => {
    const { input } = expectOk(parse(minimalBody(workflow)));
    expect(input).not.toHaveProperty('qrRepair');
    expect(repairModeFor(workflow, input)).toBe('on_failure');
  });

  it('treats null as absent', () => {
    const { input } = expectOk(parse(withField('generate_qr_art_v5', 'qrRepair', null)));
    expect(input).not.toHaveProperty('qrRepair');
  });

  it('rejects an unknown level with rule enum naming the values, and a near miss with a suggestion', () => {
    const issue = expectIssue(parse(withField('generate_qr_art_v4', 'qrRepair', 'sometimes')), 'qrRepair', 'enum');
    expect(issue.message).toContain('off, on_failure, always');
    expect(expectIssue(parse(withField('generate_qr_art_v5', 'qrRepair', 'ON_FAILURE')), 'qrRepair', 'enum').message).toContain('did you mean "on_failure"');
  });

  it('rejects a non-string with rule type', () => {
    for (const bad of [true, 1, ['always'], { mode: 'always' }]) expectIssue(parse(withField('generate_qr_art_v5s', 'qrRepair', bad)), 'qrRepair', 'type');
  });

  it('is not a field of outpainting (dropped like any unknown field)', () => {
    const { input } = expectOk(parse(withField('outpainting', 'qrRepair', 'always')));
    expect(input).not.toHaveProperty('qrRepair');
    expect(repairModeFor('outpainting', input)).toBe('off');
  });

  it('resolves a stored input from before the field existed, or with a garbage value, to the default', () => {
    expect(repairModeFor('generate_qr_art_v4s', { workflow: 'generate_qr_art_v4s', qrText: 'x', qrContent: 'y' })).toBe('on_failure');
    expect(repairModeFor('generate_qr_art_v2', { qrRepair: 42 })).toBe('on_failure');
  });

  it('shows the levels and the per-workflow default in the JSON Schema', () => {
    const v5 = z.toJSONSchema(requestSchemas.generate_qr_art_v5, { io: 'input' }) as Record<string, any>;
    expect(v5.properties.qrRepair).toMatchObject({ type: 'string', enum: ['off', 'on_failure', 'always'], default: 'on_failure' });
    expect(v5.required).not.toContain('qrRepair');
    const v1 = z.toJSONSchema(requestSchemas.generate_qr_art, { io: 'input' }) as Record<string, any>;
    expect(v1.properties.qrRepair).toMatchObject({ default: 'on_failure' });
    expect(v1.properties.qrRepair.description).toContain('cannot locate');
  });
});
