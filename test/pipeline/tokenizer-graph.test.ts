/**
 * Tokenizer folders in each exporter's layout (scripts/demo-models/exports/tokenizers.ts) give
 * the same token ids as the demo's vocab.json + merges.txt; a folder with only OnnxStack/Amuse's
 * tokenizer graph is read through its CLIPTokenizer node's attributes; a folder with none is
 * refused at start naming what was looked for.
 */
import { copyFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/tokenizers.ts';
import { DEMO_TOKENIZER, writeTokenizerFolder } from '../../scripts/demo-models/exports/tokenizers.ts';
import { readTokenizerFacts } from '../../src/models/graph-facts.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions } from '../../src/pipeline/sessions.ts';
import { readTokenizerGraph } from '../../src/pipeline/tokenizer-graph.ts';
import { ClipTokenizer } from '../../src/pipeline/tokenizer.ts';

const PROMPTS = ['a purple castle', 'A RED, GREEN and blue code; light!', 'nsfwdemo   picture of the sea at night', '', 'ünïcödé words and 123 numbers'];

const tempDir = () => mkdtemp(join(tmpdir(), 'qrart-tok-'));

describe('tokenizer folder layouts', () => {
  it('tokenizer.json alone and a tokenizer graph alone give the ids vocab.json + merges.txt gives', async () => {
    const want = await ClipTokenizer.load(DEMO_TOKENIZER);
    for (const layout of ['tokenizer-json', 'graph'] as const) {
      const got = await ClipTokenizer.load(await writeTokenizerFolder(await tempDir(), layout));
      expect(got.vocabSize, layout).toBe(want.vocabSize);
      expect([...got.encodeBatch(PROMPTS)], layout).toEqual([...want.encodeBatch(PROMPTS)]);
      for (const p of PROMPTS) expect(got.tokenize(p), `${layout}: ${p}`).toEqual(want.tokenize(p));
    }
  });

  it("reads the CLIPTokenizer node's vocab, merges and padding_length (onnxruntime-extensions layout)", async () => {
    const graph = await readTokenizerGraph(await writeTokenizerFolder(await tempDir(), 'graph'));
    expect(graph?.path).toMatch(/cliptokenizer\.onnx$/);
    expect(graph?.paddingLength).toBe(77);
    expect(graph?.merges.startsWith('#version')).toBe(false);
    expect(JSON.parse(graph!.vocab)['<|endoftext|>']).toBeTypeOf('number');
  });

  it('a folder with no tokenizer is refused naming the files looked for and what it holds', async () => {
    const dir = await writeTokenizerFolder(await tempDir(), 'none');
    await expect(ClipTokenizer.load(dir)).rejects.toThrow(/no CLIP tokenizer in .*vocab\.json \+ merges\.txt.*tokenizer\.json.*cliptokenizer\.onnx.*it holds README\.txt/);
    // An .onnx file that is not a tokenizer graph is named as such.
    await copyFile(fileOf('text_encoder'), join(dir, 'model.onnx'));
    await expect(ClipTokenizer.load(dir)).rejects.toThrow(/no CLIPTokenizer node of onnxruntime-extensions in model\.onnx/);
  });

  it('each row matches its own contract, and only its own, on the folder facts', async () => {
    for (const row of ROWS) {
      const dir = await tempDir();
      await row.build(dir);
      const facts = await readTokenizerFacts(join(dir, 'tokenizer'));
      expect(ROWS.filter((r) => r.contract.matches(facts)).map((r) => r.contract.id), row.contract.id).toEqual([row.contract.id]);
    }
  });

  it('the worker starts on the tokenizer-graph row and refuses the empty one with the contract message', async () => {
    const start = async (id: string) => {
      const dir = await tempDir();
      const manifest = await ROWS.find((r) => r.contract.id === id)!.build(dir);
      return createSessions(await loadManifest(manifest), { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, roles: [] });
    };
    const sessions = await start('tokenizer-graph');
    try {
      const tok = sessions.models.get('demo-sd15')!.tokenizer;
      expect([...tok.encodeBatch(PROMPTS)]).toEqual([...(await ClipTokenizer.load(DEMO_TOKENIZER)).encodeBatch(PROMPTS)]);
    } finally {
      await sessions.release();
    }
    const missing = ROWS.find((r) => r.contract.id === 'tokenizer-missing')!.contract;
    await expect(start('tokenizer-missing')).rejects.toThrow(missing.refusal!);
  });
});

function fileOf(role: string): string {
  return join(DEMO_TOKENIZER, '..', role, 'model.onnx');
}
