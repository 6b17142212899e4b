/**
 * Image → caption with an encoder–decoder captioner (ViT-GPT2 / BLIP exported as
 * captioner_encoder + captioner_decoder, or the demo captioner). Outpainting uses the caption as
 * its prompt when the request has none.
 *
 * The encoder runs once. The decoder has no KV cache (optimum's plain decoder_model.onnx): each
 * step feeds the whole prefix, which is cheap at caption lengths (≤ a few dozen tokens). Greedy
 * decoding is beam search with one beam; with more, the beams of a step run as one batch.
 * Ties between equal scores go to the lower token id, so the caption is a pure function of the
 * image and the graphs.
 *
 * The export's repetition settings (caption-scores.ts) change each step's scores as transformers'
 * generate() does: on the raw logits when greedy, on the log-probabilities with beams (and those
 * changed log-probabilities are what a beam's score sums). A banned token is never chosen.
 */
import type ort from 'onnxruntime-node';
import { resizeImage } from '../image/decode.ts';
import type { RawImage } from '../image/raw.ts';
import { decodeCaption, type CaptionerConfig } from './caption-config.ts';
import { applyScoreRules, type ScoreRules } from './caption-scores.ts';
import { GraphSessionError, type GraphSession } from './graph-session.ts';
import type { ModelSessions } from './sessions.ts';
import { floatTensor, idsTensor, toFloat32 } from './tensors.ts';

export interface CaptionOptions {
  /** Generated tokens at most (default: the export's generation config, else 20). */
  readonly maxTokens?: number;
  /** 1 = greedy (default: the export's num_beams, else 1). */
  readonly beams?: number;
  /** Overrides the export's repetition settings (tests; the worker uses the export's). */
  readonly rules?: ScoreRules;
  readonly signal?: AbortSignal;
}

/** A caption is a prompt: more than this many characters is cut at a word boundary. */
export const MAX_CAPTION_CHARS = 300;

interface Beam {
  readonly ids: number[];
  /** Sum of log-probabilities of the generated tokens. */
  readonly logp: number;
}

/** The captioner's pieces of a model, or an error naming what is missing. */
function captionerOf(model: ModelSessions): { encoder: GraphSession; decoder: GraphSession; config: CaptionerConfig } {
  const encoder = model.graphs.captioner_encoder;
  const decoder = model.graphs.captioner_decoder;
  if (!encoder || !decoder || !model.captioner) {
    throw new GraphSessionError(`model '${model.id}' has no captioner (captioner_encoder, captioner_decoder and their tokenizer.json) loaded`);
  }
  return { encoder, decoder, config: model.captioner };
}

/** pixel_values [1,3,H,W]: resized as the preprocessor config says (the graph's fixed size wins), normalised. */
async function pixelValues(image: RawImage, encoder: GraphSession, config: CaptionerConfig): Promise<ort.Tensor> {
  const shape = encoder.input('pixel_values').shape;
  const fixed = (axis: number, fallback: number): number => (typeof shape[axis] === 'number' && (shape[axis] as number) > 0 ? (shape[axis] as number) : fallback);
  const height = fixed(2, config.image.height);
  const width = fixed(3, config.image.width);
  const sized = image.width === width && image.height === height ? image : await resizeImage(image, width, height, config.image.crop ? 'cover' : 'fill');
  const plane = width * height;
  const out = new Float32Array(3 * plane);
  const { data, channels } = sized;
  for (let c = 0; c < 3; c++) {
    const k = 1 / (255 * config.image.std[c]!);
    const b = -config.image.mean[c]! / config.image.std[c]!;
    for (let p = 0; p < plane; p++) out[c * plane + p] = data[channels === 1 ? p : p * channels + c]! * k + b;
  }
  return floatTensor(encoder.floatType('pixel_values'), out, [1, 3, height, width]);
}

/** log-softmax of one row of scores (float64 for stable sums); banned (−∞) entries stay −∞. */
function logSoftmax(row: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i]! > max) max = row[i]!;
  if (max === -Infinity) return Float64Array.from(row);
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i]! - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(row, (v) => v - lse);
}

/** Higher score first, then the lower id; total even with −∞ (a subtraction would give NaN). */
const byScore = (a: number, b: number, tieA: number, tieB: number): number => (a > b ? -1 : a < b ? 1 : tieA - tieB);

/** One beam's next-token scores: transformers applies the rules to logits when greedy, to log-probabilities with beams. */
function stepScores(row: Float32Array, ids: readonly number[], rules: ScoreRules, greedy: boolean): Float64Array {
  if (!greedy) {
    const lp = logSoftmax(row);
    applyScoreRules(lp, ids, rules);
    return lp;
  }
  const logits = Float64Array.from(row);
  applyScoreRules(logits, ids, rules);
  return logSoftmax(logits);
}

/** The caption of `image` (any size, RGB or grey). */
export async function captionImage(image: RawImage, model: ModelSessions, options: CaptionOptions = {}): Promise<string> {
  const { encoder, decoder, config } = captionerOf(model);
  const maxTokens = options.maxTokens ?? config.maxNewTokens;
  const beams = options.beams ?? config.numBeams;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`maxTokens must be a positive integer, got ${maxTokens}`);
  if (!Number.isInteger(beams) || beams < 1) throw new RangeError(`beams must be a positive integer, got ${beams}`);
  const rules = options.rules ?? config.rules;
  options.signal?.throwIfAborted();

  const enc = await encoder.run({ pixel_values: await pixelValues(image, encoder, config) }, ['last_hidden_state']);
  const hidden = enc.last_hidden_state!;
  const hiddenData = toFloat32(hidden);
  const [, seq = 1, width = 1] = hidden.dims;
  const hiddenFor = new Map<number, ort.Tensor>();
  /** The encoder output repeated for n beams, in the decoder's float type. */
  const encoderStates = (n: number): ort.Tensor => {
    let t = hiddenFor.get(n);
    if (!t) {
      const data = new Float32Array(n * hiddenData.length);
      for (let i = 0; i < n; i++) data.set(hiddenData, i * hiddenData.length);
      hiddenFor.set(n, (t = floatTensor(decoder.floatType('encoder_hidden_states'), data, [n, seq, width])));
    }
    return t;
  };
  const eos = new Set(config.eosIds);
  const ended = (b: Beam): number => b.logp / Math.max(1, b.ids.length - 1) ** config.lengthPenalty;

  let alive: Beam[] = [{ ids: [config.startId], logp: 0 }];
  const finished: Beam[] = [];
  for (let step = 0; step < maxTokens && alive.length > 0; step++) {
    options.signal?.throwIfAborted();
    const n = alive.length;
    const t = alive[0]!.ids.length;
    const ids = new Int32Array(n * t);
    alive.forEach((b, i) => ids.set(b.ids, i * t));
    const feeds: Record<string, ort.Tensor> = {
      input_ids: idsTensor(decoder.input('input_ids').type, ids, [n, t]),
      encoder_hidden_states: encoderStates(n),
    };
    if (decoder.hasInput('attention_mask')) feeds.attention_mask = idsTensor(decoder.input('attention_mask').type, new Int32Array(n * t).fill(1), [n, t]);
    if (decoder.hasInput('encoder_attention_mask')) {
      feeds.encoder_attention_mask = idsTensor(decoder.input('encoder_attention_mask').type, new Int32Array(n * seq).fill(1), [n, seq]);
    }
    const out = await decoder.run(feeds, ['logits']);
    const logits = toFloat32(out.logits!);
    const vocab = out.logits!.dims[2]!;
    if (logits.length !== n * t * vocab) throw new Error(`${decoder.path}: logits are [${out.logits!.dims.join(', ')}], expected [${n}, ${t}, V]`);

    // Candidates: each beam's best `2·beams` continuations (enough that `beams` survive the ended ones).
    const candidates: { beam: number; token: number; logp: number }[] = [];
    alive.forEach((b, i) => {
      const lp = stepScores(logits.subarray((i * t + t - 1) * vocab, (i * t + t) * vocab), b.ids, rules, beams === 1);
      const order = Array.from(lp.keys()).sort((x, y) => byScore(lp[x]!, lp[y]!, x, y));
      for (const token of order.slice(0, 2 * beams)) {
        if (lp[token] !== -Infinity) candidates.push({ beam: i, token, logp: b.logp + lp[token]! });
      }
    });
    candidates.sort((x, y) => byScore(x.logp, y.logp, x.beam, y.beam) || x.token - y.token);
    const next: Beam[] = [];
    for (const c of candidates) {
      if (next.length === beams) break;
      const ids2 = [...alive[c.beam]!.ids, c.token];
      if (eos.has(c.token)) finished.push({ ids: ids2, logp: c.logp });
      else next.push({ ids: ids2, logp: c.logp });
    }
    alive = next;
    // Early stop (HF early_stopping=true): enough finished hypotheses.
    if (finished.length >= beams) break;
  }
  const pool = finished.length > 0 ? finished : alive;
  const best = pool.reduce((a, b) => (ended(b) > ended(a) ? b : a));
  const text = decodeCaption(best.ids.slice(1), config);
  return capCaption(text);
}

/** At most MAX_CAPTION_CHARS characters, cut at the last space before the limit. */
export function capCaption(text: string): string {
  if (text.length <= MAX_CAPTION_CHARS) return text;
  const cut = text.slice(0, MAX_CAPTION_CHARS);
  const space = cut.lastIndexOf(' ');
  return (space > MAX_CAPTION_CHARS / 2 ? cut.slice(0, space) : cut).trim();
}
