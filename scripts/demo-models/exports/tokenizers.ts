/**
 * Fixtures of the tokenizer-folder contracts (src/models/contracts/tokenizers.ts), each carrying
 * the demo vocabulary (models/demo/tokenizer) in one exporter's layout: vocab.json + merges.txt
 * (CLIP/diffusers), tokenizer.json alone (Hugging Face tokenizers), a tokenizer graph alone
 * (OnnxStack/Amuse cliptokenizer.onnx: one onnxruntime-extensions CLIPTokenizer node whose
 * attributes are vocab, merges and padding_length, as onnxruntime_extensions/_hf_cvt.py writes
 * them; see src/pipeline/tokenizer-graph.ts), and a folder with none of them.
 */
import { create } from '@bufbuild/protobuf';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GraphProtoSchema, OperatorSetIdProtoSchema } from 'onnx-buf';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/tokenizers.ts';
import { DataType, encodeModel, newModel, node, valueInfo, type ValueInfoProto } from '../../../src/onnx/proto.ts';
import { CLIP_TOKENIZER_OP, EXTENSIONS_DOMAIN } from '../../../src/pipeline/tokenizer-graph.ts';
import { writeManifestVariant } from '../manifest-variants.ts';
import type { ExportRow } from './row.ts';

export const DEMO_TOKENIZER = fileURLToPath(new URL('../../../models/demo/tokenizer/', import.meta.url));

const demoFiles = async (): Promise<{ vocab: string; merges: string }> => ({
  vocab: await readFile(join(DEMO_TOKENIZER, 'vocab.json'), 'utf8'),
  merges: await readFile(join(DEMO_TOKENIZER, 'merges.txt'), 'utf8'),
});

/** merges.txt without its #version line: the "a b" lines in rank order. */
const mergeLines = (merges: string): string[] => merges.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#version'));

/** A string-typed graph value (proto.ts's valueInfo knows only numeric types). */
function stringValue(name: string, dims: readonly (number | string)[]): ValueInfoProto {
  const v = valueInfo(name, 'uint8', dims);
  if (v.type?.value.case === 'tensorType') v.type.value.value.elemType = DataType.STRING;
  return v;
}

/** cliptokenizer.onnx as OnnxStack/Amuse ship it: string_input → CLIPTokenizer (ai.onnx.contrib) → input_ids, attention_mask. */
export function tokenizerGraph(vocabJson: string, mergesTxt: string, paddingLength = 77): Uint8Array {
  const vocab = JSON.stringify(JSON.parse(vocabJson));
  const graph = create(GraphProtoSchema, {
    name: 'cliptokenizer',
    node: [node(CLIP_TOKENIZER_OP, ['string_input'], ['input_ids', 'attention_mask'], { vocab, merges: mergeLines(mergesTxt).join('\n'), padding_length: paddingLength }, 'bpetok', EXTENSIONS_DOMAIN)],
    input: [stringValue('string_input', [1])],
    output: [valueInfo('input_ids', 'int64', ['batch_size', 'num_input_ids']), valueInfo('attention_mask', 'int64', ['batch_size', 'num_attention_masks'])],
  });
  const opsetImport = [create(OperatorSetIdProtoSchema, { domain: '', version: 17n }), create(OperatorSetIdProtoSchema, { domain: EXTENSIONS_DOMAIN, version: 1n })];
  return encodeModel(newModel({ irVersion: 8n, opsetImport, producerName: 'qr-art fixture (onnxruntime-extensions layout)', graph }));
}

/** tokenizer.json alone, as Hugging Face tokenizers writes a CLIP fast tokenizer (the fields ClipTokenizer reads). */
export function tokenizerJson(vocabJson: string, mergesTxt: string): string {
  const vocab = JSON.parse(vocabJson) as Record<string, number>;
  const special = ['<|startoftext|>', '<|endoftext|>'].filter((t) => t in vocab);
  return JSON.stringify({
    version: '1.0',
    added_tokens: special.map((content) => ({ id: vocab[content], content, special: true, single_word: false, lstrip: false, rstrip: false, normalized: true })),
    model: { type: 'BPE', dropout: null, unk_token: '<|endoftext|>', continuing_subword_prefix: '', end_of_word_suffix: '</w>', fuse_unk: false, vocab, merges: mergeLines(mergesTxt) },
  });
}

type Layout = 'vocab-merges' | 'tokenizer-json' | 'graph' | 'none';

/** Writes <dir>/tokenizer in `layout` with the demo vocabulary; returns the folder. */
export async function writeTokenizerFolder(dir: string, layout: Layout): Promise<string> {
  const out = join(dir, 'tokenizer');
  await mkdir(out, { recursive: true });
  const { vocab, merges } = await demoFiles();
  if (layout === 'vocab-merges') {
    await copyFile(join(DEMO_TOKENIZER, 'vocab.json'), join(out, 'vocab.json'));
    await copyFile(join(DEMO_TOKENIZER, 'merges.txt'), join(out, 'merges.txt'));
  } else if (layout === 'tokenizer-json') {
    await writeFile(join(out, 'tokenizer.json'), tokenizerJson(vocab, merges));
  } else if (layout === 'graph') {
    await writeFile(join(out, 'cliptokenizer.onnx'), tokenizerGraph(vocab, merges));
  } else {
    await writeFile(join(out, 'README.txt'), 'no tokenizer here\n');
  }
  return out;
}

function row(id: string, layout: Layout): ExportRow {
  return {
    contract: CONTRACTS.find((c) => c.id === id)!,
    async build(dir) {
      const folder = await writeTokenizerFolder(dir, layout);
      return writeManifestVariant(dir, id, (m) => {
        m.models['demo-sd15'].tokenizer = folder;
      });
    },
  };
}

export const ROWS: ExportRow[] = [
  row('tokenizer-vocab-merges', 'vocab-merges'),
  row('tokenizer-json', 'tokenizer-json'),
  row('tokenizer-graph', 'graph'),
  row('tokenizer-missing', 'none'),
];
