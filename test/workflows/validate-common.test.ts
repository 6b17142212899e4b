import { describe, expect, it } from 'vitest';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import { cryptoRandomSeed, parseCreateBody } from '../../src/workflows/validate.ts';
import { DEV_OPTIONS, expectIssue, expectIssues, expectOk, FIXED_SEED, minimalBody, parse, withField } from './helpers.ts';
import { checkRange } from './ranges.ts';

describe('request body', () => {
  it('must be a JSON object', () => {
    for (const body of [null, undefined, 'x', 42, true, [], [{ workflow: 'outpainting' }]]) {
      const issue = expectIssue(parse(body), '', 'type');
      expect(issue.message).toContain('JSON object');
    }
  });

  it('requires workflow and lists the allowed names', () => {
    const issue = expectIssue(parse({ qrText: 'x' }), 'workflow', 'required');
    for (const name of WORKFLOWS) expect(issue.message).toContain(name);
    expectIssue(parse({ workflow: null }), 'workflow', 'required');
    expectIssue(parse({ workflow: 4 }), 'workflow', 'type');
  });

  it('rejects an unknown workflow with one issue whose message lists every allowed name', () => {
    for (const name of ['generate_qr_art_v6', 'GENERATE_QR_ART', 'generate_qr_art_v1_1', 'toString', '__proto__', '']) {
      const result = parse({ workflow: name, qrText: 'x' });
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.issues).toHaveLength(1);
      expect(result.issues[0]).toMatchObject({ field: 'workflow', rule: 'unknown_workflow' });
      for (const allowed of WORKFLOWS) expect(result.issues[0]!.message).toContain(allowed);
    }
  });

  it('reports all issues, not just the first', () => {
    const result = parse({ workflow: 'generate_qr_art_v4s', qrStrength: 9, qrSteps: 5, batchSize: 0, seed: -1, webhook: 'ftp://x' });
    const got = expectIssues(result).map((i) => `${i.field}/${i.rule}`).sort();
    expect(got).toEqual(['batchSize/min', 'qrContent/required', 'qrSteps/min', 'qrStrength/max', 'qrText/required', 'seed/min', 'webhook/https_url']);
  });

  it('words issues clearly', () => {
    expect(expectIssue(parse(withField('generate_qr_art', 'qrStrength', 3.5)), 'qrStrength', 'max').message).toBe('qrStrength must be at most 3; got 3.5');
    expect(expectIssue(parse(withField('generate_qr_art_v4', 'batchSize', 2.5)), 'batchSize', 'integer').message).toBe('batchSize must be an integer; got 2.5');
    expect(expectIssue(parse(withField('generate_qr_art_v4', 'batchSize', '2')), 'batchSize', 'type').message).toBe('batchSize must be an integer; got a string');
  });

  it('treats null as absent: optional fields take their defaults', () => {
    const { input } = expectOk(parse({ ...minimalBody('generate_qr_art_v5'), seed: null, steps: null, negativePrompt: null, webhook: null, qrX: null }));
    expect(input).toMatchObject({ seed: FIXED_SEED, steps: 30, qrX: 153 });
    expect(input).not.toHaveProperty('negativePrompt');
    expect(input).not.toHaveProperty('webhook');
  });

  it('drops unknown fields', () => {
    for (const workflow of WORKFLOWS) {
      const body = JSON.parse(JSON.stringify({ ...minimalBody(workflow), extra: 1, __proto__x: 2 }).replace('"__proto__x"', '"__proto__"'));
      const { input } = expectOk(parse({ ...body, another: { nested: true } }));
      expect(input).not.toHaveProperty('extra');
      expect(input).not.toHaveProperty('another');
      expect(Object.prototype.hasOwnProperty.call(input, '__proto__')).toBe(false);
      expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
    }
  });

  it('rejects wrong JSON types on every numeric field without throwing', () => {
    const numeric: Record<string, string[]> = {
      generate_qr_art: ['qrStrength', 'seed'],
      generate_qr_art_v4: ['qrStrength', 'batchSize', 'seed'],
      generate_qr_art_v5: ['steps', 'qrStrength', 'cfg', 'batchSize', 'qrX', 'qrY', 'qrRatio', 'seed'],
      outpainting: ['image_width', 'image_height', 'padding_left', 'padding_right', 'padding_top', 'padding_bottom', 'seed'],
    };
    for (const [workflow, fields] of Object.entries(numeric)) {
      for (const field of fields) {
        for (const bad of ['1', '', true, [], [1], {}, { value: 1 }]) {
          expectIssue(parse(withField(workflow as never, field, bad)), field, 'type');
        }
      }
    }
  });

  it('rejects non-finite numbers', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expectIssue(parse(withField('generate_qr_art', 'qrStrength', bad)), 'qrStrength', 'type');
      expectIssues(parse(withField('generate_qr_art_v5', 'seed', bad)));
    }
  });

  it('rejects wrong JSON types on string fields', () => {
    for (const bad of [1, true, ['a'], { a: 1 }]) {
      expectIssue(parse(withField('generate_qr_art', 'qrText', bad)), 'qrText', 'type');
      expectIssue(parse(withField('generate_qr_art', 'qrImage', bad)), 'qrImage', 'type');
      expectIssue(parse(withField('generate_qr_art', 'negativePrompt', bad)), 'negativePrompt', 'type');
      expectIssue(parse(withField('generate_qr_art', 'webhook', bad)), 'webhook', 'type');
      expectIssue(parse(withField('generate_qr_art_v5', 'preset', bad)), 'preset', 'type');
    }
  });
});

describe('seed', () => {
  it('is checked 0..9007199254740991 on every workflow', () => {
    for (const workflow of WORKFLOWS) checkRange(workflow, 'seed', 0, 9007199254740991, true);
  });

  it('is random when absent, within range, and stored in the echo', () => {
    const seeds = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const { input } = expectOk(parseCreateBody(minimalBody('generate_qr_art_v4'), { allowPrivateUrls: false }));
      expect(Number.isSafeInteger(input.seed)).toBe(true);
      expect(input.seed as number).toBeGreaterThanOrEqual(0);
      seeds.add(input.seed as number);
    }
    expect(seeds.size).toBeGreaterThan(15);
  });

  it('uses the injected source when the body has none, and the body value when it has one', () => {
    let calls = 0;
    const options = { allowPrivateUrls: false, randomSeed: () => (calls++, 77) };
    expect(expectOk(parseCreateBody(minimalBody('outpainting'), options)).input.seed).toBe(77);
    expect(expectOk(parseCreateBody({ ...minimalBody('outpainting'), seed: 5 }, options)).input.seed).toBe(5);
    expect(calls).toBe(1);
  });

  it('falls back to a crypto seed when the injected source misbehaves', () => {
    for (const bad of [() => -1, () => 1.5, () => Number.NaN, () => 2 ** 60, () => { throw new Error('x'); }]) {
      const { input } = expectOk(parseCreateBody(minimalBody('generate_qr_art'), { allowPrivateUrls: false, randomSeed: bad }));
      expect(Number.isSafeInteger(input.seed)).toBe(true);
      expect(input.seed as number).toBeGreaterThanOrEqual(0);
    }
  });

  it('draws crypto seeds uniformly over 53 bits', () => {
    let max = 0;
    for (let i = 0; i < 200; i++) {
      const s = cryptoRandomSeed();
      expect(Number.isSafeInteger(s) && s >= 0 && s <= Number.MAX_SAFE_INTEGER).toBe(true);
      max = Math.max(max, s);
    }
    expect(max).toBeGreaterThan(2 ** 50);
  });
});

describe('rerun reproduces the request', () => {
  it('parses its own normalized input back to the same input, for every workflow', () => {
    for (const workflow of WORKFLOWS) {
      const first = expectOk(parseCreateBody(minimalBody(workflow), { allowPrivateUrls: false }));
      const second = expectOk(parseCreateBody(first.input, { allowPrivateUrls: false, randomSeed: () => 1 }));
      expect(second).toEqual(first);
    }
  });
});

describe('text limits', () => {
  it('accepts 2000 characters in qrText, prompt and negativePrompt and rejects 2001', () => {
    const cases: Array<[string, string]> = [
      ['generate_qr_art', 'qrText'], ['generate_qr_art_v4', 'qrText'], ['generate_qr_art_v5', 'prompt'],
      ['outpainting', 'prompt'], ['generate_qr_art_v3b', 'negativePrompt'], ['generate_qr_art_v5s', 'negativePrompt'],
    ];
    for (const [workflow, field] of cases) {
      expect(expectOk(parse(withField(workflow as never, field, 'x'.repeat(2000)))).input[field]).toHaveLength(2000);
      expect(expectIssue(parse(withField(workflow as never, field, 'x'.repeat(2001))), field, 'max').message).toContain('2000 characters');
    }
  });

  it('accepts an empty negativePrompt', () => {
    expect(expectOk(parse(withField('generate_qr_art', 'negativePrompt', ''))).input.negativePrompt).toBe('');
  });
});

describe('webhook', () => {
  const wf = 'generate_qr_art_v4';

  it('accepts a public https URL on every workflow and stores it', () => {
    for (const workflow of WORKFLOWS) {
      expect(expectOk(parse(withField(workflow, 'webhook', 'https://hooks.example.com/qr?x=1'))).input.webhook).toBe('https://hooks.example.com/qr?x=1');
    }
  });

  it('rejects http unless allowPrivateUrls, and even then to a public host', () => {
    expectIssue(parse(withField(wf, 'webhook', 'http://hooks.example.com/qr')), 'webhook', 'https_url');
    expect(expectOk(parse(withField(wf, 'webhook', 'http://127.0.0.1:3000/qr'), DEV_OPTIONS)).input.webhook).toBe('http://127.0.0.1:3000/qr');
    expect(expectOk(parse(withField(wf, 'webhook', 'http://host.docker.internal:3000/qr'), DEV_OPTIONS)).input.webhook).toBe('http://host.docker.internal:3000/qr');
    const issue = expectIssue(parse(withField(wf, 'webhook', 'http://hooks.example.com/qr'), DEV_OPTIONS), 'webhook', 'https_url');
    expect(issue.message).toBe(
      'webhook must use https: plain http is accepted only to a loopback, private or internal host (ALLOW_PRIVATE_URLS is for development), and hooks.example.com is public',
    );
    expectIssue(parse(withField(wf, 'webhook', 'http://93.184.216.34/qr'), DEV_OPTIONS), 'webhook', 'https_url');
    expect(expectOk(parse(withField(wf, 'webhook', 'https://hooks.example.com/qr'), DEV_OPTIONS)).input.webhook).toBe('https://hooks.example.com/qr');
  });

  it('rejects other schemes and relative URLs in every mode', () => {
    for (const bad of ['ftp://example.com/x', 'ws://example.com', 'mailto:a@example.com', '/hook', 'example.com/hook', '', 'https//x']) {
      expectIssue(parse(withField(wf, 'webhook', bad)), 'webhook', 'https_url');
      expectIssue(parse(withField(wf, 'webhook', bad), DEV_OPTIONS), 'webhook', 'https_url');
    }
  });

  it('rejects literal loopback, private and link-local hosts unless allowPrivateUrls', () => {
    const hosts = [
      'localhost', 'LOCALHOST', 'localhost.', 'localhost..', 'api.localhost', '127.0.0.1', '127.1.2.3', '0.0.0.0', '10.1.2.3', '172.16.0.1',
      '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '[::1]', '[::]', '[fe80::1]', '[fd00::1]',
      '[::ffff:127.0.0.1]', '[::ffff:10.0.0.1]', '2130706433', '0x7f.1', '017700000001', '224.0.0.1', '255.255.255.255',
    ];
    for (const host of hosts) {
      const url = `https://${host}:8443/hook`;
      const issue = expectIssue(parse(withField(wf, 'webhook', url)), 'webhook', 'public_host');
      expect(issue.message).toContain('private');
      expectOk(parse(withField(wf, 'webhook', url), DEV_OPTIONS));
    }
  });

  it('refuses credentials in the webhook, qrImage and image URLs (no_credentials), even with allowPrivateUrls', () => {
    const cases = [
      [wf, 'webhook'],
      ['generate_qr_art_v3a', 'qrImage'],
      ['outpainting', 'image'],
    ] as const;
    for (const [workflow, field] of cases) {
      for (const url of ['https://user:secret@example.com/a.png', 'https://token@example.com/a.png', 'https://:secret@example.com/a.png']) {
        const issue = expectIssue(parse(withField(workflow, field, url)), field, 'no_credentials');
        expect(issue.message).toBe(`${field} must not contain credentials (user:password@)`);
        expectIssue(parse(withField(workflow, field, url), DEV_OPTIONS), field, 'no_credentials');
      }
      expectOk(parse(withField(workflow, field, 'https://example.com/a.png?user=me')));
    }
  });

  it('accepts public literal IPs', () => {
    for (const host of ['8.8.8.8', '172.32.0.1', '192.169.0.1', '[2606:4700:4700::1111]', '[::ffff:8.8.8.8]']) {
      expectOk(parse(withField(wf, 'webhook', `https://${host}/hook`)));
    }
  });

  it('limits the URL to 2048 characters', () => {
    const prefix = 'https://hooks.example.com/';
    const exact = prefix + 'a'.repeat(2048 - prefix.length);
    expectOk(parse(withField(wf, 'webhook', exact)));
    expectIssue(parse(withField(wf, 'webhook', exact + 'a')), 'webhook', 'max');
  });
});
