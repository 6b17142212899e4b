import { describe, expect, it } from 'vitest';
import {
  DEV_OPTIONS,
  expectIssue,
  expectOk,
  FIXED_SEED,
  minimalBody,
  parse,
  V1_FAMILY,
  V4_FAMILY,
  V4_WITH_STEPS,
  withField,
  without,
} from './helpers.ts';
import { checkRange } from './ranges.ts';

describe('QR Art v1 to v3b (client QR image)', () => {
  it.each(V1_FAMILY)('%s accepts qrText + qrImage and echoes the defaults', (workflow) => {
    const value = expectOk(parse(minimalBody(workflow)));
    expect(value).toEqual({
      workflow,
      input: {
        workflow,
        qrText: 'a castle on a hill',
        qrImage: 'https://example.com/qr.png',
        qrStrength: 0.85,
        qrSteps: 16,
        seed: FIXED_SEED,
      },
      imageCount: 1,
      costCents: expect.any(Number),
    });
  });

  it.each(V1_FAMILY)('%s requires qrText and qrImage', (workflow) => {
    expect(expectIssue(parse(without(workflow, 'qrText')), 'qrText', 'required').message).toBe('qrText is required');
    expectIssue(parse(without(workflow, 'qrImage')), 'qrImage', 'required');
    expectIssue(parse(withField(workflow, 'qrText', null)), 'qrText', 'required');
    expectIssue(parse(withField(workflow, 'qrText', '')), 'qrText', 'required');
    expectIssue(parse(withField(workflow, 'qrText', '  \n ')), 'qrText', 'required');
  });

  it.each(V1_FAMILY)('%s, given a body written for v4 or v5, says which of its names it reads', (workflow) => {
    const { qrText, qrImage: _qrImage, ...rest } = minimalBody(workflow);
    const result = parse({ ...rest, prompt: qrText, qrContent: 'https://example.com' });
    expect(expectIssue(result, 'qrText', 'required').message).toBe(`qrText is required: ${workflow} reads qrText, not prompt (which it ignores)`);
    expect(expectIssue(result, 'qrImage', 'required').message).toBe(`qrImage is required: ${workflow} reads qrImage, not qrContent (which it ignores)`);
  });

  it.each(V1_FAMILY)('%s does not need qrContent and drops it, with batchSize and other versions\' fields', (workflow) => {
    const body = { ...minimalBody(workflow), qrContent: 42, batchSize: 9, prompt: 'x', steps: 'y', model: 'niji', image: 1 };
    const { input, imageCount } = expectOk(parse(body));
    expect(Object.keys(input).sort()).toEqual(['qrImage', 'qrSteps', 'qrStrength', 'qrText', 'seed', 'workflow']);
    expect(imageCount).toBe(1);
  });

  it('checks qrStrength 0..3 and qrSteps 10..20 on every v1..v3b workflow', () => {
    for (const workflow of V1_FAMILY) {
      checkRange(workflow, 'qrStrength', 0, 3, false);
      checkRange(workflow, 'qrSteps', 10, 20, true);
    }
  });

  it('requires qrImage to be an absolute http(s) URL of at most 2048 characters', () => {
    const wf = 'generate_qr_art_v2';
    expect(expectOk(parse(withField(wf, 'qrImage', 'http://example.com/qr.png'))).input.qrImage).toBe('http://example.com/qr.png');
    for (const bad of ['qr.png', '/qr.png', 'ftp://example.com/qr.png', 'data:image/png;base64,AAAA', 'javascript:alert(1)', 'https://', 'not a url']) {
      expectIssue(parse(withField(wf, 'qrImage', bad)), 'qrImage', 'url');
    }
    const prefix = 'https://example.com/';
    const exact = prefix + 'a'.repeat(2048 - prefix.length);
    expect(expectOk(parse(withField(wf, 'qrImage', exact))).input.qrImage).toBe(exact);
    expectIssue(parse(withField(wf, 'qrImage', exact + 'a')), 'qrImage', 'max');
    expect(expectIssue(parse(withField(wf, 'qrImage', '')), 'qrImage', 'required').message).toBe('qrImage must not be empty');
  });

  it('refuses a qrImage on a literal loopback or private host at once, unless allowPrivateUrls', () => {
    const wf = 'generate_qr_art_v3a';
    for (const host of ['localhost', '127.0.0.1', '10.0.0.7', '169.254.169.254', '[::1]', '0x7f.1']) {
      const url = `http://${host}:8080/qr.png`;
      const issue = expectIssue(parse(withField(wf, 'qrImage', url)), 'qrImage', 'public_host');
      expect(issue.message).toMatch(/^qrImage must not point at a loopback, private or link-local host/);
      expect(expectOk(parse(withField(wf, 'qrImage', url), DEV_OPTIONS)).input.qrImage).toBe(url);
    }
    // A name is not resolved here: the worker's fetcher checks what it resolves to.
    expectOk(parse(withField(wf, 'qrImage', 'https://images.internal/qr.png')));
  });
});

describe('QR Art v4 family (service-encoded qrContent)', () => {
  it.each(V4_FAMILY)('%s accepts qrText + qrContent and echoes the defaults', (workflow) => {
    const { input, imageCount } = expectOk(parse(minimalBody(workflow)));
    const expected: Record<string, unknown> = {
      workflow,
      qrText: 'a castle on a hill',
      qrContent: 'https://example.com',
      qrStrength: 1.5,
      batchSize: 1,
      seed: FIXED_SEED,
    };
    if (workflow !== 'generate_qr_art_v4') expected.qrSteps = 20;
    expect(input).toEqual(expected);
    expect(imageCount).toBe(1);
  });

  it.each(V4_FAMILY)('%s requires qrText and a non-empty qrContent', (workflow) => {
    expectIssue(parse(without(workflow, 'qrText')), 'qrText', 'required');
    expect(expectIssue(parse(without(workflow, 'qrContent')), 'qrContent', 'required').message).toBe('qrContent is required');
    expectIssue(parse(withField(workflow, 'qrContent', '')), 'qrContent', 'required');
    expectIssue(parse(withField(workflow, 'qrContent', null)), 'qrContent', 'required');
    expectIssue(parse(withField(workflow, 'qrContent', 12345)), 'qrContent', 'type');
  });

  it.each(V4_FAMILY)('%s, given a v5 body\'s prompt, says it reads qrText', (workflow) => {
    const { qrText, ...rest } = minimalBody(workflow);
    expect(expectIssue(parse({ ...rest, prompt: qrText }), 'qrText', 'required').message).toBe(
      `qrText is required: ${workflow} reads qrText, not prompt (which it ignores)`,
    );
  });

  it.each(V4_FAMILY)('%s ignores qrImage (not required, not stored) and prompt / v5 fields', (workflow) => {
    const body = { ...minimalBody(workflow), qrImage: 'not a url', prompt: 5, cfg: 'x', resolution: 'XXL', enhance: 'face' };
    const { input } = expectOk(parse(body));
    for (const key of ['qrImage', 'prompt', 'cfg', 'resolution', 'enhance']) expect(input).not.toHaveProperty(key);
  });

  it('checks qrStrength 0..3 and batchSize 1..4 on every v4 variant', () => {
    for (const workflow of V4_FAMILY) {
      checkRange(workflow, 'qrStrength', 0, 3, false);
      checkRange(workflow, 'batchSize', 1, 4, true);
    }
  });

  it('checks qrSteps 10..60 on v4s, v4real, v4niji and v4dream', () => {
    for (const workflow of V4_WITH_STEPS) checkRange(workflow, 'qrSteps', 10, 60, true);
  });

  it('drops qrSteps sent to v4, whatever its value, because v4 does not accept steps', () => {
    for (const value of [20, 5, 1000, 'abc', 1.5, null]) {
      const { input } = expectOk(parse(withField('generate_qr_art_v4', 'qrSteps', value)));
      expect(input).not.toHaveProperty('qrSteps');
    }
  });

  it('produces batchSize images', () => {
    for (const workflow of V4_FAMILY) {
      for (const batchSize of [1, 2, 3, 4]) {
        const value = expectOk(parse(withField(workflow, 'batchSize', batchSize)));
        expect(value.imageCount).toBe(batchSize);
        expect(value.input.batchSize).toBe(batchSize);
      }
    }
  });
});

describe('qrSteps backwards compatibility (it was a string in earlier releases)', () => {
  it('accepts a string of decimal digits and stores it as an integer', () => {
    expect(expectOk(parse(withField('generate_qr_art', 'qrSteps', '18'))).input.qrSteps).toBe(18);
    expect(expectOk(parse(withField('generate_qr_art_v4s', 'qrSteps', '060'))).input.qrSteps).toBe(60);
    expect(expectOk(parse(withField('generate_qr_art_v4real', 'qrSteps', '20'))).input.qrSteps).toBe(20);
  });

  it('applies the range to the string form too', () => {
    expectIssue(parse(withField('generate_qr_art', 'qrSteps', '9')), 'qrSteps', 'min');
    expectIssue(parse(withField('generate_qr_art', 'qrSteps', '21')), 'qrSteps', 'max');
    expectIssue(parse(withField('generate_qr_art_v4s', 'qrSteps', '99999999999999999999999')), 'qrSteps', 'max');
  });

  it('rejects anything else that is not an integer with rule integer, and only that rule', () => {
    for (const bad of ['1.5', '15.0', ' 15', '15 ', '-15', '+15', '1e1', '0x10', '', 'fifteen', 15.5, true, [15], { n: 15 }]) {
      const result = parse(withField('generate_qr_art_v3a', 'qrSteps', bad));
      expectIssue(result, 'qrSteps', 'integer');
      if (!result.ok) expect(result.issues.filter((i) => i.field === 'qrSteps')).toHaveLength(1);
    }
  });
});
