/** Style presets: every preset of the spec has a template, and applying one behaves. */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyPreset, STYLE_TEMPLATES } from '../../src/pipeline/prompts.ts';
import { ClipTokenizer } from '../../src/pipeline/tokenizer.ts';
import { PRESETS, type PresetName } from '../../src/workflows/presets.ts';

describe('style templates', () => {
  it('cover exactly the preset names of the spec', () => {
    expect(Object.keys(STYLE_TEMPLATES).sort()).toEqual([...PRESETS].sort());
  });

  it('each has one {prompt} near the start, a negative, and stays short', () => {
    for (const name of PRESETS) {
      const { positive, negative } = STYLE_TEMPLATES[name];
      expect(positive.split('{prompt}'), name).toHaveLength(2);
      expect(positive.indexOf('{prompt}'), name).toBeLessThan(45);
      expect(positive.length, name).toBeLessThan(140);
      expect(negative.length, name).toBeGreaterThan(10);
      expect(positive, name).not.toMatch(/\s{2}|,,|^\s|\s$/);
    }
  });

  it('are distinct from one another', () => {
    const positives = new Set(PRESETS.map((p) => STYLE_TEMPLATES[p].positive));
    expect(positives.size).toBe(PRESETS.length);
  });
});

describe('applyPreset', () => {
  it('wraps the prompt and joins the negatives (client first)', () => {
    const r = applyPreset('cinematic', 'a lighthouse at dawn', 'people');
    expect(r.prompt).toMatch(/^cinematic film still of a lighthouse at dawn, /);
    expect(r.negativePrompt).toMatch(/^people, .*blurry/);
  });

  it('without a preset passes the prompts through (trimmed)', () => {
    expect(applyPreset(undefined, '  a cat ', ' dog ')).toEqual({ prompt: 'a cat', negativePrompt: 'dog' });
  });

  it('an empty prompt leaves no dangling words or commas', () => {
    for (const name of PRESETS) {
      const r = applyPreset(name, '  ');
      expect(r.prompt, name).not.toMatch(/\{prompt\}|^[\s,]|[\s,]$|,\s*,| of,| of$/);
      expect(r.prompt.length, name).toBeGreaterThan(5);
    }
    expect(applyPreset('cinematic', '').prompt).toMatch(/^cinematic film still, shallow depth of field/);
    expect(applyPreset('enhance', '').prompt).toBe('sharp focus, fine detail, balanced light, high quality');
  });

  it('takes prompts literally ($& and friends are not replacement patterns)', () => {
    expect(applyPreset('anime', 'cost $& and $1').prompt).toMatch(/^anime artwork of cost \$& and \$1, /);
  });

  it('rejects an unknown preset', () => {
    expect(() => applyPreset('vaporwave' as PresetName, 'x')).toThrow(/unknown preset vaporwave/);
  });

  it('leaves the subject inside the 75-token window', async () => {
    // The demo vocabulary is far smaller than CLIP's, so this over-counts: a safe bound.
    const tok = await ClipTokenizer.load(fileURLToPath(new URL('../../models/demo/tokenizer', import.meta.url)));
    for (const name of PRESETS) {
      const [before] = STYLE_TEMPLATES[name].positive.split('{prompt}');
      expect(tok.encodeContent(before!).length, name).toBeLessThan(30);
    }
  });
});
