/**
 * The demo captioner (a vision encoder-decoder with a greedy word decoder): it names the image's
 * dominant colours, so outpainting without a prompt has one.
 *
 * captioner/encoder_model.onnx
 *   in  pixel_values float32 [B,3,224,224] = (rgb − 0.5)/0.5
 *   out last_hidden_state float32 [B,3,20]: per-slot next-word logits (dominant colour, "and"
 *       decision, second colour) from an 8×8 grid of cells classified to CAPTION_COLOURS
 * captioner/decoder_model.onnx
 *   in  input_ids int64 [B,T], encoder_hidden_states float32 [B,3,20]
 *   out logits float32 [B,T,20]
 *   Greedy decode from <bos> (id 1) to <eos> (id 2): "a <c1> [and <c2>] abstract painting";
 *   c2 appears when it covers ≥ 20% of the image. No KV cache: feed the whole prefix each step.
 *   Vocabulary (CAPTION_VOCAB, id = index): 0 <pad>, 1 <bos>, 2 <eos>, 3 a, 4 and, 5 abstract,
 *   6 painting, 7 red, 8 orange, 9 yellow, 10 green, 11 cyan, 12 blue, 13 purple, 14 magenta,
 *   15 pink, 16 brown, 17 white, 18 grey, 19 black. Written beside the graphs as tokenizer.json
 *   (WordLevel), generation_config.json and preprocessor_config.json.
 */
import { GraphBuilder } from './graph.ts';

export const CAPTION_COLOURS = {
  red: [0.85, 0.12, 0.1],
  orange: [1.0, 0.55, 0.08],
  yellow: [0.95, 0.88, 0.15],
  green: [0.15, 0.65, 0.2],
  cyan: [0.1, 0.8, 0.85],
  blue: [0.1, 0.22, 0.85],
  purple: [0.5, 0.15, 0.72],
  magenta: [0.95, 0.1, 0.9],
  pink: [1.0, 0.6, 0.75],
  brown: [0.5, 0.3, 0.12],
  white: [0.95, 0.95, 0.95],
  grey: [0.5, 0.5, 0.5],
  black: [0.05, 0.05, 0.05],
} as const satisfies Record<string, readonly number[]>;

/** Captioner vocabulary; the index is the token id. */
export const CAPTION_VOCAB = [
  '<pad>',
  '<bos>',
  '<eos>',
  'a',
  'and',
  'abstract',
  'painting',
  ...Object.keys(CAPTION_COLOURS),
] as const;
export const CAPTION_IDS = { pad: 0, bos: 1, eos: 2 } as const;
const V = CAPTION_VOCAB.length;
const W = (word: string): number => CAPTION_VOCAB.indexOf(word as (typeof CAPTION_VOCAB)[number]);
const COLOUR_BASE = W('red');
const SLOTS = 3; // 0: first colour, 1: "and" decision, 2: second colour
/** A second colour is named when it covers at least this share of the image. */
const SECOND_COLOUR_SHARE = 0.2;

export function buildCaptionEncoder(): Uint8Array {
  const g = new GraphBuilder('captioner_encoder');
  const px = g.input('pixel_values', 'float32', ['batch', 3, 224, 224]);
  const rgb = g.add(g.mul(px, g.f(0.5)), g.f(0.5));
  const cells = g.op('Transpose', [g.reshape(g.avgPool(rgb, 28), [0, 3, 64])], { perm: [0, 2, 1] }); // [B,64,3]
  const protos = Object.values(CAPTION_COLOURS);
  const k = protos.length;
  const protoT = g.constF32('prototypes_t', [3, k], [0, 1, 2].flatMap((c) => protos.map((p) => p[c]!)));
  const protoNorm = g.constF32('prototype_norms', [k], protos.map((p) => p.reduce((s, v) => s + v * v, 0)));
  const cellNorm = g.reduceSum(g.mul(cells, cells), [2]);
  const dist2 = g.add(g.sub(cellNorm, g.mul(g.op('MatMul', [cells, protoT]), g.f(2))), protoNorm); // [B,64,K]
  const assign = g.op('Softmax', [g.mul(dist2, g.f(-400))], { axis: 2 });
  const share = g.op('ReduceMean', [assign], { axes: [1], keepdims: 0 }); // [B,K]

  const top = g.op('ReduceMax', [share], { axes: [1], keepdims: 1 });
  const isTop = g.cast(g.op('Equal', [share, top]), 'float32');
  const rest = g.sub(share, g.mul(isTop, g.f(2))); // first colour pushed far below the others
  const second = g.op('ReduceMax', [rest], { axes: [1], keepdims: 1 });

  // Place colour scores at their vocabulary ids.
  const place = g.constF32(
    'colour_to_vocab',
    [k, V],
    Array.from({ length: k * V }, (_, i) => (Math.floor(i / V) + COLOUR_BASE === i % V ? 1 : 0)),
  );
  const slot0 = g.op('MatMul', [g.mul(share, g.f(10)), place]);
  // Beats "abstract" (transition 5, base −5 for "and") exactly when second > threshold.
  const andLogit = g.add(g.mul(g.sub(second, g.f(SECOND_COLOUR_SHARE)), g.f(50)), g.f(10));
  const slot1 = g.mul(andLogit, g.constF32('and_one_hot', [V], Array.from({ length: V }, (_, i) => (i === W('and') ? 1 : 0))));
  const slot2 = g.op('MatMul', [g.mul(rest, g.f(10)), place]);
  const slots = g.op('Concat', [slot0, slot1, slot2].map((s) => g.unsqueeze(s, [1])), { axis: 1 });
  g.output(slots, 'last_hidden_state', 'float32', ['batch', SLOTS, V]);
  return g.build({ docString: 'qr-art demo caption encoder (colour shares); see scripts/demo-models/captioner.ts' });
}

export function buildCaptionDecoder(): Uint8Array {
  const g = new GraphBuilder('captioner_decoder');
  const ids = g.input('input_ids', 'int64', ['batch', 'sequence']);
  const enc = g.input('encoder_hidden_states', 'float32', ['batch', SLOTS, V]);
  // Transition logits: next word given the current one; colour choices come from the slots.
  const trans = Array.from({ length: V * V }, () => -5);
  const gates = Array.from({ length: V * SLOTS }, () => 0);
  const set = (from: number, to: number, v = 10): void => {
    trans[from * V + to] = v;
  };
  set(CAPTION_IDS.pad, CAPTION_IDS.eos);
  set(CAPTION_IDS.bos, W('a'));
  set(W('abstract'), W('painting'));
  set(W('painting'), CAPTION_IDS.eos);
  set(CAPTION_IDS.eos, CAPTION_IDS.eos);
  gates[W('a') * SLOTS + 0] = 1;
  gates[W('and') * SLOTS + 2] = 1;
  for (let c = COLOUR_BASE; c < V; c++) {
    set(c, W('abstract'), 5);
    gates[c * SLOTS + 1] = 1;
  }
  const rows = g.op('Gather', [g.constF32('transitions', [V, V], trans), ids], { axis: 0 }); // [B,T,V]
  const gate = g.op('Gather', [g.constF32('slot_gates', [V, SLOTS], gates), ids], { axis: 0 }); // [B,T,S]
  // After an "and" the "and" slot is off, so the second colour ends the list.
  const isAnd = g.cast(g.op('Equal', [ids, g.constI64(undefined, [], [W('and')])]), 'float32');
  const seenAnd = g.op('Min', [g.op('CumSum', [isAnd, g.constI64(undefined, [], [1])]), g.f(1)]);
  const andOff = g.mul(g.unsqueeze(seenAnd, [2]), g.constF32(undefined, [SLOTS], [0, 1, 0]));
  const gated = g.mul(gate, g.sub(g.f(1), andOff));
  const logits = g.add(rows, g.op('MatMul', [gated, enc]));
  g.output(logits, 'logits', 'float32', ['batch', 'sequence', V]);
  return g.build({ docString: 'qr-art demo caption decoder (word grammar); see scripts/demo-models/captioner.ts' });
}

/** Hugging Face tokenizers file (WordLevel) for the captioner vocabulary. */
export function captionTokenizerJson(): string {
  const specials = [0, 1, 2].map((id) => ({
    id,
    content: CAPTION_VOCAB[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  return `${JSON.stringify(
    {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: specials,
      normalizer: { type: 'Lowercase' },
      pre_tokenizer: { type: 'WhitespaceSplit' },
      post_processor: null,
      decoder: null,
      model: {
        type: 'WordLevel',
        vocab: Object.fromEntries(CAPTION_VOCAB.map((w, i) => [w, i])),
        unk_token: '<pad>',
      },
    },
    null,
    2,
  )}\n`;
}
