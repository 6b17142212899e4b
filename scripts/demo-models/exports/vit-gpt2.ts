/**
 * Fixtures of optimum's ViT-GPT2 captioner export (src/models/contracts/vit-gpt2.ts): the demo
 * captioner under optimum's names and axes (encoder_model.onnx, decoder_model.onnx, with the
 * tokenizer and configs beside them), and its decoder with past inputs (decoder_with_past_model.onnx)
 * and merged (decoder_model_merged.onnx), which are refused.
 */
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/vit-gpt2.ts';
import type { ExportRow } from './row.ts';
import { addInputs, DEMO_DIR, demoGraph, setDims, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;
const CONFIGS = ['tokenizer.json', 'generation_config.json', 'preprocessor_config.json'];
/** Demo captioner: hidden width 20, 3 encoder tokens; one layer of past for the cached variants. */
const PAST = ['key', 'value'].map((kv) => ({ name: `past_key_values.0.${kv}`, type: 'float32' as const, dims: ['batch_size', 1, 'past_decoder_sequence_length', 20] }));

async function encoder() {
  const m = await demoGraph('captioner/encoder_model.onnx');
  setDims(m, 'pixel_values', ['batch_size', 'num_channels', 'height', 'width']);
  setDims(m, 'last_hidden_state', ['batch_size', 'encoder_sequence_length', 20]);
  return m;
}

async function decoder(variant: 'plain' | 'with-past' | 'merged') {
  const m = await demoGraph('captioner/decoder_model.onnx');
  setDims(m, 'input_ids', ['batch_size', 'decoder_sequence_length']);
  setDims(m, 'encoder_hidden_states', ['batch_size', 'encoder_sequence_length', 20]);
  setDims(m, 'logits', ['batch_size', 'decoder_sequence_length', 20]);
  if (variant !== 'plain') addInputs(m, PAST);
  if (variant === 'merged') addInputs(m, [{ name: 'use_cache_branch', type: 'bool', dims: [1] }]);
  return m;
}

async function build(dir: string, variant: 'plain' | 'with-past' | 'merged'): Promise<string> {
  const file = { plain: 'decoder_model.onnx', 'with-past': 'decoder_with_past_model.onnx', merged: 'decoder_model_merged.onnx' }[variant];
  const enc = await writeGraph(dir, 'captioner/encoder_model.onnx', await encoder());
  const dec = await writeGraph(dir, `captioner/${file}`, await decoder(variant));
  for (const c of CONFIGS) await copyFile(join(DEMO_DIR, 'captioner', c), join(dir, 'captioner', c));
  return writeFixtureManifest(dir, (g) => {
    g.captioner_encoder = { path: enc };
    g.captioner_decoder = { path: dec };
  });
}

export const ROWS: ExportRow[] = [
  { contract: contract('optimum-vit-gpt2-encoder'), exercises: ['caption'], build: (dir) => build(dir, 'plain') },
  { contract: contract('optimum-vit-gpt2-decoder'), exercises: ['caption'], build: (dir) => build(dir, 'plain') },
  { contract: contract('optimum-vit-gpt2-decoder-with-past'), build: (dir) => build(dir, 'with-past') },
  { contract: contract('optimum-vit-gpt2-decoder-merged'), build: (dir) => build(dir, 'merged') },
];
