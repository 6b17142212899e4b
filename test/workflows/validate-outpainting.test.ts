import { describe, expect, it } from 'vitest';
import { DEV_OPTIONS, expectIssue, expectOk, FIXED_SEED, minimalBody, parse, withField, without } from './helpers.ts';
import { checkRange } from './ranges.ts';

const OP = 'outpainting';
const REQUIRED = ['image', 'image_width', 'image_height', 'padding_left', 'padding_right', 'padding_top', 'padding_bottom', 'type'];

describe('outpainting', () => {
  it('accepts the required fields and echoes them with the seed; prompt stays absent', () => {
    const { input, imageCount, costCents } = expectOk(parse(minimalBody(OP)));
    expect(input).toEqual({
      workflow: OP,
      image: 'https://example.com/photo.jpg',
      seed: FIXED_SEED,
      image_width: 512,
      image_height: 512,
      padding_left: 128,
      padding_bottom: 0,
      padding_top: 0,
      padding_right: 128,
      type: 'one_shot',
    });
    expect(imageCount).toBe(1);
    expect(costCents).toBe(200);
  });

  it('stores prompt and negativePrompt when given', () => {
    const { input } = expectOk(parse({ ...minimalBody(OP), prompt: 'a beach', negativePrompt: 'people' }));
    expect(input).toMatchObject({ prompt: 'a beach', negativePrompt: 'people' });
  });

  it.each(REQUIRED)('requires %s', (field) => {
    expectIssue(parse(without(OP, field)), field, 'required');
    expectIssue(parse(withField(OP, field, null)), field, 'required');
  });

  it('reports every missing required field at once', () => {
    const result = parse({ workflow: OP });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues.map((i) => i.field).sort()).toEqual([...REQUIRED].sort());
  });

  it('checks image_width and image_height 64..2048', () => {
    checkRange(OP, 'image_width', 64, 2048, true);
    checkRange(OP, 'image_height', 64, 2048, true);
  });

  it('checks each padding 0..2048 pixels', () => {
    for (const side of ['left', 'right', 'top', 'bottom']) {
      // keep another padding positive so that padding = 0 alone is valid
      checkRange(OP, `padding_${side}`, 0, 2048, true, side === 'left' ? { padding_right: 1 } : { padding_left: 1 });
    }
  });

  it('requires at least one padding greater than 0', () => {
    const body = { ...minimalBody(OP), padding_left: 0, padding_right: 0, padding_top: 0, padding_bottom: 0 };
    expect(expectIssue(parse(body), '', 'min_total').message).toContain('at least one of padding_left');
    expectOk(parse({ ...body, padding_bottom: 1 }));
  });

  it('bounds each side of the final canvas to 3840 pixels', () => {
    const base = { ...minimalBody(OP), image_width: 2048, image_height: 512, padding_right: 0, padding_top: 0, padding_bottom: 0 };
    expectOk(parse({ ...base, padding_left: 1792 })); // 3840 x 512
    const issue = expectIssue(parse({ ...base, padding_left: 1793 }), '', 'canvas_bounds');
    expect(issue.message).toContain('3841x512');
    const tall = { ...minimalBody(OP), image_width: 512, image_height: 2048, padding_left: 0, padding_right: 0, padding_bottom: 0 };
    expectOk(parse({ ...tall, padding_top: 1792 }));
    expectIssue(parse({ ...tall, padding_top: 1792, padding_bottom: 1 }), '', 'canvas_bounds');
  });

  it('reports a rule over several fields beside a bad field it does not read (all problems at once)', () => {
    const zeroPaddings = { ...minimalBody(OP), padding_left: 0, padding_right: 0, padding_top: 0, padding_bottom: 0, image_width: 10 };
    const both = parse(zeroPaddings);
    expectIssue(both, 'image_width', 'min');
    expectIssue(both, '', 'min_total');
    const wide = { ...minimalBody(OP), image_width: 2048, padding_left: 2048, padding_right: 2048, padding_top: 0, padding_bottom: 0, image_height: 'x' };
    const wideAndBad = parse(wide);
    expectIssue(wideAndBad, 'image_height', 'type');
    expect(expectIssue(wideAndBad, '', 'canvas_bounds').message).toContain('6144x?');
  });

  it('bounds the canvas area to 3456 x 2592, the largest output size', () => {
    const base = { ...minimalBody(OP), image_width: 2048, image_height: 2048, padding_right: 0, padding_bottom: 0 };
    expectOk(parse({ ...base, padding_left: 1408, padding_top: 544 })); // exactly 3456 x 2592
    expectIssue(parse({ ...base, padding_left: 1409, padding_top: 544 }), '', 'canvas_bounds'); // 3457 x 2592
    expectIssue(parse({ ...base, padding_left: 1792, padding_top: 285 }), '', 'canvas_bounds'); // 3840 x 2333: sides ok, area too big
    expectOk(parse({ ...base, padding_left: 1792, padding_top: 284 })); // 3840 x 2332
  });

  it('accepts both types and prices them', () => {
    expect(expectOk(parse(withField(OP, 'type', 'one_shot'))).costCents).toBe(200);
    expect(expectOk(parse(withField(OP, 'type', 'multi_shots'))).costCents).toBe(400);
    for (const bad of ['multi_shot', 'one-shot', 'ONE_SHOT']) expectIssue(parse(withField(OP, 'type', bad)), 'type', 'enum');
    // An empty string in a required field is missing (workflows.md, rule required), for the image too.
    expect(expectIssue(parse(withField(OP, 'type', '')), 'type', 'required').message).toBe('type must not be empty');
    expectIssue(parse(withField(OP, 'image', '')), 'image', 'required');
    expectIssue(parse(withField(OP, 'type', 1)), 'type', 'type');
  });

  it('requires image to be an absolute http(s) URL', () => {
    for (const bad of ['photo.jpg', 'file:///etc/passwd', 'gs://bucket/x.jpg']) expectIssue(parse(withField(OP, 'image', bad)), 'image', 'url');
    expectOk(parse(withField(OP, 'image', 'http://example.com/a.jpg')));
  });

  it('refuses an image on a literal loopback or private host at once, unless allowPrivateUrls', () => {
    // The last ones: the fetcher's table, which create-time checks once missed (6to4 of the
    // metadata address, Teredo, the 6to4 relay, outside 2000::/3, local-use NAT64).
    const literal = ['http://127.0.0.1:9000/a.jpg', 'https://192.168.1.20/a.jpg', 'http://[fd00::1]/a.jpg'];
    const missedBefore = ['http://[2002:a9fe:a9fe::]/a.jpg', 'http://[2001::1]/a.jpg', 'http://192.88.99.1/a.jpg', 'http://[4000::1]/a.jpg', 'http://[64:ff9b:1::a00:1]/a.jpg'];
    for (const url of [...literal, ...missedBefore]) {
      expectIssue(parse(withField(OP, 'image', url)), 'image', 'public_host');
      expectOk(parse(withField(OP, 'image', url), DEV_OPTIONS));
    }
  });

  it('does not store QR fields sent to outpainting', () => {
    const { input } = expectOk(parse({ ...minimalBody(OP), qrText: 'x', qrContent: 'y', batchSize: 4, qrStrength: 'z' }));
    for (const key of ['qrText', 'qrContent', 'batchSize', 'qrStrength']) expect(input).not.toHaveProperty(key);
  });

  it('rejects wrong types for the sizes', () => {
    expectIssue(parse(withField(OP, 'image_width', '512')), 'image_width', 'type');
    expectIssue(parse(withField(OP, 'padding_left', 10.5)), 'padding_left', 'integer');
    expectIssue(parse(withField(OP, 'image_height', [512])), 'image_height', 'type');
    expectIssue(parse(withField(OP, 'padding_top', { px: 1 })), 'padding_top', 'type');
  });
});
