/**
 * A ViT-GPT2 captioner (nlpconnect/vit-gpt2-image-captioning) as optimum exports it
 * (`optimum-cli export onnx --model nlpconnect/vit-gpt2-image-captioning --task image-to-text[-with-past]`).
 * Verified against huggingface/optimum-onnx (commit 1939f27): model_configs.py
 * VisionEncoderDecoderOnnxConfig (encoder: pixel_values [batch_size, num_channels, height, width]
 * → last_hidden_state; decoder: input_ids, encoder_hidden_states → logits, present.N.key/value with
 * past) and base.py (decoder input names: decoder_input_ids → input_ids, encoder_outputs →
 * encoder_hidden_states; post_process_exported_models merges decoder_model.onnx and
 * decoder_with_past_model.onnx into decoder_model_merged.onnx with a use_cache_branch input).
 * The worker decodes without a cache (whole sequence each token), so it serves decoder_model.onnx.
 */
import type { ExportContract } from './contract.ts';
import { FLOAT, graphMatches, hasInput, IDS, isGraph } from './match.ts';

const past = (name: string) => /^past_key_values\.\d+\.(key|value)$/.test(name);
const decoderCore = [
  { name: 'input_ids', types: IDS, dims: ['batch_size', 'decoder_sequence_length'] },
  { name: 'encoder_hidden_states', types: FLOAT, dims: ['batch_size', 'encoder_sequence_length', '*'] },
];
/** optimum's post-processing writes the merged decoder beside decoder_model.onnx and keeps it, so the fix is the manifest's path. */
const USE_PLAIN = 'point captioner_decoder at decoder_model.onnx (written by every export: --task image-to-text alone, or beside the with-past and merged decoders of image-to-text-with-past, the default); the worker runs the decoder without a cache';

export const ROWS: ExportContract[] = [
  {
    id: 'optimum-vit-gpt2-encoder',
    exporter: 'optimum',
    graph: 'ViT-GPT2 encoder_model.onnx',
    role: 'captioner_encoder',
    verdict: 'serves',
    how: 'pixel_values sized and normalised by preprocessor_config.json (the axes are symbolic), last_hidden_state to the decoder',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'pixel_values', types: FLOAT, dims: ['batch_size', 'num_channels', 'height', 'width'] }],
        outputs: [{ name: 'last_hidden_state', types: FLOAT, dims: ['batch_size', '*', '*'] }],
      }),
  },
  {
    id: 'optimum-vit-gpt2-decoder',
    exporter: 'optimum',
    graph: 'ViT-GPT2 decoder_model.onnx',
    role: 'captioner_decoder',
    verdict: 'serves',
    how: 'greedy or beam decoding without a cache: the whole sequence each token; logits read, present.N.* outputs unused; tokenizer.json and generation_config.json beside it',
    matches: (f) =>
      graphMatches(f, { inputs: decoderCore, outputs: [{ name: 'logits', types: FLOAT, dims: ['batch_size', 'decoder_sequence_length', '*'] }] }),
  },
  {
    id: 'optimum-vit-gpt2-decoder-with-past',
    exporter: 'optimum',
    graph: 'ViT-GPT2 decoder_with_past_model.onnx',
    role: 'captioner_decoder',
    verdict: 'refuses',
    how: USE_PLAIN,
    refusal: 'decoder_model.onnx',
    matches: (f) => isGraph(f) && f.inputs.some((i) => past(i.name)) && !hasInput(f, 'use_cache_branch'),
  },
  {
    id: 'optimum-vit-gpt2-decoder-merged',
    exporter: 'optimum',
    graph: 'ViT-GPT2 decoder_model_merged.onnx (use_cache_branch)',
    role: 'captioner_decoder',
    verdict: 'refuses',
    how: USE_PLAIN,
    refusal: 'decoder_model.onnx',
    matches: (f) => isGraph(f) && hasInput(f, 'use_cache_branch') && f.inputs.some((i) => past(i.name)),
  },
];
