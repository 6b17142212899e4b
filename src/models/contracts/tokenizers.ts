/**
 * Tokenizer folders (a model's `tokenizer` in the manifest), as exporters leave them; read by
 * ClipTokenizer.load (pipeline/tokenizer.ts), in this order of preference:
 *
 *   vocab.json + merges.txt   CLIP's own files, what transformers' CLIPTokenizer.save_pretrained
 *                             writes (diffusers' tokenizer/ folders, optimum's too)
 *   tokenizer.json            a Hugging Face fast tokenizer alone (model.vocab, model.merges,
 *                             added_tokens): some optimum / HF ONNX repositories ship only this
 *   *.onnx tokenizer graph    OnnxStack/Amuse's cliptokenizer.onnx: one onnxruntime-extensions
 *                             CLIPTokenizer node; its vocab and merges attributes are read
 *                             (pipeline/tokenizer-graph.ts), the graph is never run
 *
 * A folder with none of these is refused at start with a message that names what was looked for.
 */
import type { ExportContract, ExportFacts } from './contract.ts';

const files = (f: ExportFacts): readonly string[] => (f.role === 'tokenizer' ? f.files : []);
const has = (f: ExportFacts, name: string): boolean => files(f).includes(name);
const hasVocabMerges = (f: ExportFacts): boolean => has(f, 'vocab.json') && has(f, 'merges.txt');
const hasGraph = (f: ExportFacts): boolean => files(f).some((n) => n.toLowerCase().endsWith('.onnx'));

export const ROWS: ExportContract[] = [
  {
    id: 'tokenizer-vocab-merges',
    exporter: 'CLIP / diffusers / optimum',
    graph: 'tokenizer/vocab.json + merges.txt',
    role: 'tokenizer',
    verdict: 'serves',
    how: 'BPE from vocab.json and merges.txt (first 48 894 merges, as CLIPTokenizer reads); special tokens from special_tokens_map.json / tokenizer_config.json when present',
    matches: (f) => f.role === 'tokenizer' && hasVocabMerges(f),
  },
  {
    id: 'tokenizer-json',
    exporter: 'Hugging Face tokenizers (optimum, HF ONNX repositories)',
    graph: 'tokenizer/tokenizer.json alone',
    role: 'tokenizer',
    verdict: 'serves',
    how: 'BPE from tokenizer.json model.vocab and model.merges, plus added_tokens and end_of_word_suffix',
    matches: (f) => f.role === 'tokenizer' && !hasVocabMerges(f) && has(f, 'tokenizer.json'),
  },
  {
    id: 'tokenizer-graph',
    exporter: 'OnnxStack/Amuse',
    graph: 'tokenizer/cliptokenizer.onnx alone (onnxruntime-extensions CLIPTokenizer)',
    role: 'tokenizer',
    verdict: 'adapts',
    how: "the custom op cannot run in onnxruntime-node: its CLIPTokenizer node's vocab and merges attributes (vocab.json / merges.txt formats) are read and the same BPE built from them; padding_length ignored (77 tokens)",
    matches: (f) => f.role === 'tokenizer' && !hasVocabMerges(f) && !has(f, 'tokenizer.json') && hasGraph(f),
  },
  {
    id: 'tokenizer-missing',
    exporter: 'any',
    graph: 'tokenizer folder with none of the above',
    role: 'tokenizer',
    verdict: 'refuses',
    how: 'copy the base model\'s tokenizer folder (vocab.json + merges.txt, e.g. from openai/clip-vit-large-patch14 or the SD1.5 repository\'s tokenizer/)',
    refusal: 'no CLIP tokenizer in',
    matches: (f) => f.role === 'tokenizer' && !hasVocabMerges(f) && !has(f, 'tokenizer.json') && !hasGraph(f),
  },
];
