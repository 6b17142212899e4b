/**
 * A caption decoder that loops the way ViT-GPT2 does without its repetition settings: greedy
 * decoding from the start token gives "a man in a man in a man in …" up to the length cap.
 * Tests use it (with the demo caption encoder, whose output it ignores) to show that
 * repetition_penalty, no_repeat_ngram_size and min_length from generation_config.json change that.
 *
 * Like ViT-GPT2 it has one special token, <|endoftext|>, that is start, end and pad at once
 * (so the repetition penalty also weighs on the end token), GPT-2 byte-level tokens ("Ġman" is
 * " man") and optimum's plain decoder contract:
 *   in  input_ids int64 [B,T], encoder_hidden_states float32 [B,S,D]
 *   out logits float32 [B,T,V]: the logits of the next token after each position depend on the
 *       token at that position alone (LOOP_TRANSITIONS; every other pair scores −5).
 *
 * Greedy captions, for reference (decoded text):
 *   no rules                             "a man in a man in a man in …" (until the cap)
 *   repetition_penalty 1.3               "a man in the hat"   (after "in", "a" falls to 6/1.3 < 5.5)
 *   no_repeat_ngram_size 2               "a man in a hat"     ("a man" may not repeat)
 *   no_repeat_ngram_size 2, min_length 8 "a man in a hat in the hat" (the end is banned until 8 ids)
 */
import { GraphBuilder } from './graph.ts';

export const LOOP_VOCAB = ['<|endoftext|>', 'Ġa', 'Ġman', 'Ġin', 'Ġthe', 'Ġhat'] as const;
type LoopToken = (typeof LOOP_VOCAB)[number];
/** Start, end and pad (GPT-2's <|endoftext|>). */
export const LOOP_END_ID = 0;
const id = (token: LoopToken): number => LOOP_VOCAB.indexOf(token);

/** [from, to, logit]: the next-token logits that are not the default −5. */
export const LOOP_TRANSITIONS: readonly (readonly [LoopToken, LoopToken, number])[] = [
  ['<|endoftext|>', 'Ġa', 10],
  ['Ġa', 'Ġman', 10],
  ['Ġa', 'Ġhat', 7],
  ['Ġman', 'Ġin', 10],
  ['Ġin', 'Ġa', 6],
  ['Ġin', 'Ġthe', 5.5],
  ['Ġthe', 'Ġhat', 10],
  ['Ġhat', '<|endoftext|>', 10],
  ['Ġhat', 'Ġin', 4],
];

export function buildLoopingCaptionDecoder(): Uint8Array {
  const V = LOOP_VOCAB.length;
  const table = new Array<number>(V * V).fill(-5);
  for (const [from, to, logit] of LOOP_TRANSITIONS) table[id(from) * V + id(to)] = logit;
  const g = new GraphBuilder('looping_caption_decoder');
  const ids = g.input('input_ids', 'int64', ['batch', 'sequence']);
  const enc = g.input('encoder_hidden_states', 'float32', ['batch', 'encoder_sequence', 'encoder_hidden']);
  const rows = g.op('Gather', [g.constF32('transitions', [V, V], table), ids], { axis: 0 }); // [B,T,V]
  // The image does not matter, but the input is read (× 0), as a real decoder's would be.
  const unused = g.mul(g.op('ReduceSum', [enc], { keepdims: 1 }), g.f(0));
  g.output(g.add(rows, unused), 'logits', 'float32', ['batch', 'sequence', V]);
  return g.build({ docString: 'qr-art fixture: a caption decoder that loops without repetition settings; see scripts/demo-models/looping-captioner.ts' });
}

/** tokenizer.json of the looping decoder (GPT-2 style: byte-level BPE, one special token). */
export function loopingTokenizerJson(): string {
  return `${JSON.stringify(
    {
      version: '1.0',
      added_tokens: [{ id: LOOP_END_ID, content: LOOP_VOCAB[LOOP_END_ID], single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }],
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: null,
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', vocab: Object.fromEntries(LOOP_VOCAB.map((t, i) => [t, i])), merges: [] },
    },
    null,
    2,
  )}\n`;
}

/** generation_config.json as ViT-GPT2 has it (start = end = pad), plus `rules` (e.g. { repetition_penalty: 1.3 }). */
export function loopingGenerationConfig(rules: Record<string, number> = {}): string {
  const ids = { decoder_start_token_id: LOOP_END_ID, bos_token_id: LOOP_END_ID, eos_token_id: LOOP_END_ID, pad_token_id: LOOP_END_ID };
  return `${JSON.stringify({ ...ids, max_length: 16, ...rules }, null, 2)}\n`;
}
