import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import { createBodySchema, requestSchemas } from '../../src/workflows/validate.ts';
import { expectOk, minimalBody, parse } from './helpers.ts';

const REQUIRED: Record<string, string[]> = {
  'qr-image': ['workflow', 'qrText', 'qrImage'],
  'qr-content': ['workflow', 'qrText', 'qrContent'],
  'qr-v5': ['workflow', 'prompt', 'qrContent'],
  outpainting: ['workflow', 'image', 'image_width', 'image_height', 'padding_left', 'padding_bottom', 'padding_top', 'padding_right', 'type'],
};

describe('request schemas export to JSON Schema', () => {
  it.each(WORKFLOWS)('z.toJSONSchema(requestSchemas[%s], {io: "input"}) produces an object schema', (workflow) => {
    const schema = z.toJSONSchema(requestSchemas[workflow], { io: 'input' }) as Record<string, any>;
    expect(schema.type).toBe('object');
    expect(schema.properties.workflow).toMatchObject({ const: workflow });
    expect(schema.properties.seed).toMatchObject({ type: 'integer', minimum: 0, maximum: 9007199254740991 });
    expect(schema.properties.webhook).toMatchObject({ type: 'string', format: 'uri' });
    const family = Object.entries(REQUIRED).find(([, req]) => req.every((f) => f in schema.properties))?.[0];
    expect(family).toBeDefined();
    expect([...schema.required].sort()).toEqual([...REQUIRED[family!]!].sort());
  });

  it('also exports with io: output', () => {
    for (const workflow of WORKFLOWS) expect(z.toJSONSchema(requestSchemas[workflow], { io: 'output' })).toHaveProperty('type', 'object');
  });

  it('exports the union of all bodies', () => {
    const schema = z.toJSONSchema(createBodySchema, { io: 'input' }) as Record<string, any>;
    expect(schema.oneOf ?? schema.anyOf).toHaveLength(WORKFLOWS.length);
  });

  it('carries ranges and defaults from the catalogue', () => {
    const v5 = z.toJSONSchema(requestSchemas.generate_qr_art_v5, { io: 'input' }) as Record<string, any>;
    expect(v5.properties.steps).toMatchObject({ type: 'integer', minimum: 10, maximum: 60, default: 30 });
    expect(v5.properties.preset.enum).toHaveLength(102);
    const v1 = z.toJSONSchema(requestSchemas.generate_qr_art, { io: 'input' }) as Record<string, any>;
    expect(v1.properties.qrStrength).toMatchObject({ type: 'number', minimum: 0, maximum: 3, default: 0.85 });
    expect(v1.properties.qrSteps.default).toBe(16);
    expect(v1.properties.qrSteps.anyOf).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'integer', minimum: 10, maximum: 20 })]));
  });

  it('accepts, when used directly, the bodies parseCreateBody accepts', () => {
    for (const workflow of WORKFLOWS) {
      expect(requestSchemas[workflow].safeParse(minimalBody(workflow)).success).toBe(true);
      expect(createBodySchema.safeParse(expectOk(parse(minimalBody(workflow))).input).success).toBe(true);
    }
  });
});
