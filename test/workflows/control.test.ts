import { describe, expect, it } from 'vitest';
import { controlPlanFor, drawsCode } from '../../src/workflows/control.ts';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import { expectOk, minimalBody, parse } from './helpers.ts';

/** The control plan is read from the input exactly as the API normalized it. */
const planFor = (body: Record<string, unknown>) => {
  const { workflow, input } = expectOk(parse(body));
  return controlPlanFor(workflow, input);
};

describe('what a job draws', () => {
  it.each(WORKFLOWS.map((workflow) => [workflow]))('drawsCode(%s) says whether its plan is a drawn code', (workflow) => {
    expect(drawsCode(workflow)).toBe(planFor(minimalBody(workflow)).kind === 'content');
  });

  it('v5: the requested size, the echoed placement and pattern, Monster-style gray for the universal model', () => {
    const plan = planFor({ ...minimalBody('generate_qr_art_v5'), aspectRatio: '9:16', resolution: 'HD', qrRatio: 0.5, qrY: 40, qrCodePartern: 'd2' });
    expect(plan).toEqual({
      kind: 'content',
      content: 'https://example.com',
      canvas: { width: 720, height: 1280 },
      placement: { x: 180, y: 40, side: 360 },
      pattern: 'd2',
      background: 'gray',
      errorCorrectionLevel: 'H',
    });
  });

  it('v5 with model real: black on white', () => {
    expect(planFor({ ...minimalBody('generate_qr_art_v5s'), model: 'real' })).toMatchObject({ background: 'white' });
  });

  it('v4 family: pattern s1 centred at 0.8 of the native 768x768 canvas; v4real on white', () => {
    expect(planFor(minimalBody('generate_qr_art_v4'))).toMatchObject({
      kind: 'content',
      canvas: { width: 768, height: 768 },
      placement: { x: 77, y: 77, side: 614 },
      pattern: 's1',
      background: 'gray',
    });
    expect(planFor(minimalBody('generate_qr_art_v4real'))).toMatchObject({ background: 'white' });
  });

  it('v1-v3b: the client image URL and the canvas it is normalized to', () => {
    expect(planFor(minimalBody('generate_qr_art_v3b'))).toEqual({ kind: 'client-image', url: minimalBody('generate_qr_art_v3b').qrImage, canvas: { width: 768, height: 768 } });
  });

  it('outpainting has no control image', () => {
    expect(planFor(minimalBody('outpainting'))).toEqual({ kind: 'none' });
  });
});
