/**
 * The demo CLIP text encoder: token ids to hidden states whose first 16 channels carry what the
 * UNets read (the prompt's colours, pattern parameters and NSFW flag).
 *
 * Dims: B = batch, h×w = latent size, H×W = 8h×8w image size (all symbolic; build.ts names them).
 *
 * text_encoder/model.onnx
 *   in  input_ids             int32   [B,77]      CLIP ids; bos 49406, eos/pad 49407
 *   out last_hidden_state     float32 [B,77,768]
 *       pooler_output         float32 [B,768]     mean over the 77 positions
 *       hidden_states.0 … .2  float32 [B,77,768]  as optimum names them with output_hidden_states:
 *                                                 the embeddings and two "layers" (for clipSkip)
 *   Channels 0..15 of each token are structured (read by the demo UNet):
 *     0-3 colour A (diffusion-space latent), 4-7 colour B (a second shade), 8 content flag
 *     (0 for bos/eos), 9-12 pattern parameters, 13 NSFW flag, 14 colour-word flag, 15 hash.
 *   Channels 16..767: sin(id·f_k + φ_k) + a small position term, so every id differs, shifted
 *   and scaled per token so the whole 768-vector has mean 0 and variance 1. That makes CLIP's
 *   relation hold: last_hidden_state = hidden_states.2 = LayerNorm(hidden_states.2) (scale 1,
 *   bias 0, to float rounding), with channels 0..15 passed exactly. hidden_states.1, the
 *   penultimate layer (clipSkip 2), has colours A and B swapped and the pattern parameters
 *   negated; hidden_states.0 has zeros in channels 0..15.
 *   Colour words (fixed palettes; other ids hash to a colour): red 49390, orange 49391,
 *   yellow 49392, green 49393, cyan 49394, blue 49395, purple 49396, pink 49397, brown 49398,
 *   white 49399, grey 49400, black 49401 (COLOUR_TOKEN_IDS). NSFW trigger: id 49405
 *   (NSFW_TRIGGER_ID) sets channel 13; the UNet then adds a strong magenta and the NSFW mark
 *   to x0 (see MAGENTA_CAP: the only way an image gets past the decoder's magenta cap).
 *   Prompt → colours: the first colour word gives colour A, the last one colour B; prompts
 *   without colour words get hashed colours from all their words; the empty prompt gives a
 *   neutral field, so guidance amplifies the prompt's colours.
 */
import { GraphBuilder, type Value } from './graph.ts';
import { latentForRgb } from './latent-space.ts';
// Deterministic weights, so rebuilt graphs are byte-identical.
import { mulberry32 as rng } from '../../src/util/mulberry32.ts';

export const TEXT_LENGTH = 77;
export const TEXT_HIDDEN = 768;
export const BOS_ID = 49406;
export const EOS_ID = 49407;
export const NSFW_TRIGGER_ID = 49405;

/** Image-space colours (RGB in [0,1]): [main, shade] per colour word. */
const COLOUR_WORDS = {
  red: [[0.85, 0.12, 0.1], [0.55, 0.05, 0.08]],
  orange: [[1.0, 0.55, 0.1], [0.85, 0.35, 0.05]],
  yellow: [[0.97, 0.88, 0.2], [0.85, 0.7, 0.1]],
  green: [[0.15, 0.7, 0.2], [0.05, 0.45, 0.15]],
  cyan: [[0.15, 0.85, 0.9], [0.05, 0.6, 0.7]],
  blue: [[0.1, 0.25, 0.9], [0.05, 0.12, 0.55]],
  purple: [[0.55, 0.2, 0.8], [0.35, 0.1, 0.55]],
  pink: [[1.0, 0.6, 0.78], [0.95, 0.45, 0.65]],
  brown: [[0.55, 0.33, 0.15], [0.4, 0.22, 0.1]],
  white: [[0.85, 0.85, 0.85], [0.72, 0.74, 0.78]],
  grey: [[0.55, 0.55, 0.55], [0.4, 0.4, 0.42]],
  black: [[0.12, 0.12, 0.12], [0.22, 0.22, 0.25]],
} as const satisfies Record<string, readonly [readonly number[], readonly number[]]>;

export type ColourWord = keyof typeof COLOUR_WORDS;
export const COLOUR_WORD_LIST = Object.keys(COLOUR_WORDS) as ColourWord[];
/** Token ids the demo text encoder gives fixed palettes (map prompt words to these). */
export const COLOUR_TOKEN_IDS: Record<ColourWord, number> = Object.fromEntries(
  COLOUR_WORD_LIST.map((w, i) => [w, 49390 + i]),
) as Record<ColourWord, number>;

/** The text encoder's hidden states, which the UNets read as encoder_hidden_states. */
export const EHS_DIMS = ['batch', TEXT_LENGTH, TEXT_HIDDEN] as const;

function uniform(n: number, lo: number, hi: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => lo + (hi - lo) * r());
}

/**
 * concat(structured, hash part) with the hash part standardised and then shifted and scaled per
 * token so that the whole vector has mean 0 and variance 1 (what a layer norm outputs): with
 * S1, S2 the sum and sum of squares of the structured channels and r̂ the standardised hash,
 * the hash part is a·r̂ + c with c = −S1/n and a = √((768 − S2)/n − c²).
 */
function unitTokens(g: GraphBuilder, structured: Value, hashed: Value): Value {
  const n = TEXT_HIDDEN - 16;
  const mean = g.op('ReduceMean', [hashed], { axes: [2], keepdims: 1 });
  const centred = g.sub(hashed, mean);
  const std = g.op('Sqrt', [g.op('ReduceMean', [g.mul(centred, centred)], { axes: [2], keepdims: 1 })]);
  const rHat = g.div(centred, g.op('Max', [std, g.f(1e-6)]));
  const s1 = g.reduceSum(structured, [2]);
  const s2 = g.reduceSum(g.mul(structured, structured), [2]);
  const c = g.mul(s1, g.f(-1 / n));
  const a = g.op('Sqrt', [g.op('Max', [g.sub(g.div(g.sub(g.f(TEXT_HIDDEN), s2), g.f(n)), g.mul(c, c)), g.f(1e-6)])]);
  return g.op('Concat', [structured, g.add(g.mul(rHat, a), c)], { axis: 2 });
}

/** The demo CLIP text encoder; `hiddenStates` false leaves out hidden_states.* (optimum's default SD export). */
export function buildTextEncoder(options: { hiddenStates?: boolean } = {}): Uint8Array {
  const g = new GraphBuilder('text_encoder');
  const ids = g.input('input_ids', 'int32', ['batch', TEXT_LENGTH]);
  const ids3 = g.unsqueeze(ids, [2]); // [B,77,1]
  const idf = g.cast(ids3, 'float32');
  const hashSin = (n: number, seed: number): Value => {
    const f = g.constF32(undefined, [n], uniform(n, 0.37, 2.9, seed));
    const phi = g.constF32(undefined, [n], uniform(n, 0, 2 * Math.PI, seed + 1));
    return g.op('Sin', [g.add(g.mul(idf, f), phi)]);
  };

  const nHash = TEXT_HIDDEN - 16;
  const pos = g.constF32('positions', [TEXT_LENGTH, 1], Array.from({ length: TEXT_LENGTH }, (_, i) => i));
  const posFreq = g.constF32(undefined, [nHash], uniform(nHash, 0.01, 0.5, 7));
  const posTerm = g.mul(g.op('Sin', [g.mul(pos, posFreq)]), g.f(0.1));
  const hashed = g.add(hashSin(nHash, 1), posTerm);

  const colourIds = g.constI32('colour_ids', [COLOUR_WORD_LIST.length], Object.values(COLOUR_TOKEN_IDS));
  const oneHot = g.cast(g.op('Equal', [ids3, colourIds]), 'float32'); // [B,77,12]
  const isColour = g.reduceSum(oneHot, [2]);
  const palette = COLOUR_WORD_LIST.flatMap((w) => [...latentForRgb(COLOUR_WORDS[w][0]), ...latentForRgb(COLOUR_WORDS[w][1])]);
  const wordColour = g.op('MatMul', [oneHot, g.constF32('palette', [COLOUR_WORD_LIST.length, 8], palette)]);
  const colour = g.add(wordColour, g.mul(g.sub(g.f(1), isColour), hashSin(8, 3)));
  const content = g.cast(g.op('Less', [ids3, g.constI32(undefined, [], [BOS_ID])]), 'float32');
  const nsfw = g.cast(g.op('Equal', [ids3, g.constI32(undefined, [], [NSFW_TRIGGER_ID])]), 'float32');
  const pattern = hashSin(4, 5);
  const hash = hashSin(1, 9);
  const structured = g.op('Concat', [colour, content, pattern, nsfw, isColour, hash], { axis: 2 });
  const hidden = unitTokens(g, structured, hashed);
  g.output(hidden, 'last_hidden_state', 'float32', EHS_DIMS);
  g.output(g.op('ReduceMean', [hidden], { axes: [1], keepdims: 0 }), 'pooler_output', 'float32', ['batch', TEXT_HIDDEN]);
  if (options.hiddenStates ?? true) {
    const swapped = g.op('Concat', [g.slice(colour, 2, 4, 8), g.slice(colour, 2, 0, 4), content, g.op('Neg', [pattern]), nsfw, isColour, hash], { axis: 2 });
    g.output(unitTokens(g, g.mul(structured, g.f(0)), hashed), 'hidden_states.0', 'float32', EHS_DIMS);
    g.output(unitTokens(g, swapped, hashed), 'hidden_states.1', 'float32', EHS_DIMS);
    g.output(hidden, 'hidden_states.2', 'float32', EHS_DIMS);
  }
  return g.build({ docString: 'qr-art demo CLIP text encoder (hashed token features); see scripts/demo-models/text-encoder.ts' });
}
