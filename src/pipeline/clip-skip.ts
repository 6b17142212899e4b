/**
 * CLIP skip (the manifest's `clipSkip` per model): condition on an earlier layer of the text
 * encoder, as anime fine-tunes are trained to. clipSkip k takes the output of the k-th layer from
 * the end (1: the last, which is what last_hidden_state already is; 2: the penultimate) and passes
 * it through the encoder's final layer norm, as diffusers does with `clip_skip` (whose count is
 * one lower: diffusers' clip_skip=1 is clipSkip 2 here, the "Clip skip 2" of the A1111 UI).
 *
 * The layers come from the graph's `hidden_states.0` … `hidden_states.N` outputs (optimum's names
 * for a CLIP text model exported with output_hidden_states; .0 is the embeddings, .N the last
 * layer, before the final layer norm). Without them clipSkip > 1 is refused at start.
 *
 * The final layer norm's scale and bias are inside the graph, where no exporter names them the
 * same way, so they are measured instead: at start the encoder runs on calibration prompts, and
 * since last_hidden_state = LayerNorm(hidden_states.N) · scale + bias channel by channel, a
 * least-squares line per channel gives both. A graph whose last_hidden_state is not such a layer
 * norm of its last hidden state (within fp16 rounding) is refused at start.
 */
import type { GraphSession } from './graph-session.ts';
import { GraphSessionError } from './graph-session.ts';
import { FLOATS } from './roles.ts';
import { idsTensor, toFloat32 } from './tensors.ts';
import type { ClipTokenizer } from './tokenizer.ts';

/** CLIP's layer_norm_eps (every SD 1.x/2.x text encoder config). */
export const CLIP_LAYER_NORM_EPS = 1e-5;
/** The output role the chosen layer is bound under on the text encoder's GraphSession. */
export const SKIP_LAYER_ROLE = 'clip_skip_hidden_state';
const LAST_LAYER_ROLE = 'final_layer_norm_input';
const HIDDEN_STATE = /^hidden_states\.(\d+)$/;
/** A calibration prompt: ordinary words (the other rows sweep the vocabulary's ids). */
const CALIBRATION_TEXT = 'a photograph of an astronaut riding a horse, red and blue, highly detailed, soft light';

export interface ClipSkipLayer {
  /** The manifest's clipSkip (≥ 2). */
  readonly clipSkip: number;
  /** The graph output read: hidden_states.<N + 1 − clipSkip>. */
  readonly output: string;
  /** The final layer norm, per channel. */
  readonly scale: Float32Array;
  readonly bias: Float32Array;
}

/** hidden_states.N outputs of a graph, by N. */
function hiddenStateOutputs(te: GraphSession): Map<number, string> {
  const out = new Map<number, string>();
  for (const name of te.session.outputNames) {
    const m = HIDDEN_STATE.exec(name);
    if (m) out.set(Number(m[1]), name);
  }
  return out;
}

/**
 * Binds the layer clipSkip asks for on the model's text encoder and measures the final layer
 * norm; throws naming the manifest field and the export option when the graph cannot do it.
 */
export async function prepareClipSkip(te: GraphSession, tokenizer: ClipTokenizer, clipSkip: number, modelId: string): Promise<ClipSkipLayer> {
  const field = `models.${modelId}.clipSkip`;
  const layers = hiddenStateOutputs(te);
  if (layers.size === 0) {
    throw new GraphSessionError(
      `${te.path}: ${field} is ${clipSkip}, which needs the text encoder's hidden states, but the graph's outputs are ${te.session.outputNames.map((n) => `'${n}'`).join(', ')}; ` +
        `export it with output_hidden_states (outputs hidden_states.0 … hidden_states.N, as optimum names them; docs/models.md §2.1)`,
    );
  }
  const last = Math.max(...layers.keys());
  const index = last + 1 - clipSkip;
  const name = layers.get(index);
  if (index < 1) throw new GraphSessionError(`${te.path}: ${field} is ${clipSkip}, but the graph has ${last} layer${last === 1 ? '' : 's'} (hidden_states.1 … hidden_states.${last})`);
  if (!name) throw new GraphSessionError(`${te.path}: ${field} is ${clipSkip}, which needs the output hidden_states.${index}; the graph does not have it`);
  const hidden = { types: FLOATS, ranks: [3] };
  te.bindExtraOutput({ role: LAST_LAYER_ROLE, ...hidden }, layers.get(last)!);
  te.bindExtraOutput({ role: SKIP_LAYER_ROLE, ...hidden }, name);
  const { scale, bias } = await measureFinalLayerNorm(te, tokenizer, layers.get(last)!);
  return { clipSkip, output: name, scale, bias };
}

/** Calibration rows: a prompt, the highest ids below bos (rare merges), and ids spread over the whole vocabulary. */
function calibrationIds(tokenizer: ClipTokenizer): Int32Array {
  const n = tokenizer.maxLength;
  const inner = n - 2;
  const rows = [tokenizer.encode(CALIBRATION_TEXT)];
  const row = (id: (i: number) => number): Int32Array => Int32Array.from({ length: n }, (_, i) => (i === 0 ? tokenizer.bosId : i === n - 1 ? tokenizer.eosId : id(i - 1)));
  const top = Math.max(0, tokenizer.bosId - inner);
  rows.push(row((i) => Math.min(top + i, tokenizer.bosId - 1)));
  rows.push(row((i) => Math.floor(((i + 0.5) * tokenizer.bosId) / inner)));
  const out = new Int32Array(rows.length * n);
  rows.forEach((r, i) => out.set(r, i * n));
  return out;
}

/** Each token's vector standardised as a layer norm does (no scale or bias). */
function standardise(hidden: Float32Array, width: number): Float64Array {
  const out = new Float64Array(hidden.length);
  for (let t = 0; t < hidden.length; t += width) {
    let mean = 0;
    for (let c = 0; c < width; c++) mean += hidden[t + c]!;
    mean /= width;
    let variance = 0;
    for (let c = 0; c < width; c++) variance += (hidden[t + c]! - mean) ** 2;
    const inv = 1 / Math.sqrt(variance / width + CLIP_LAYER_NORM_EPS);
    for (let c = 0; c < width; c++) out[t + c] = (hidden[t + c]! - mean) * inv;
  }
  return out;
}

async function measureFinalLayerNorm(te: GraphSession, tokenizer: ClipTokenizer, lastName: string): Promise<{ scale: Float32Array; bias: Float32Array }> {
  const ids = calibrationIds(tokenizer);
  const rows = ids.length / tokenizer.maxLength;
  const out = await te.run({ input_ids: idsTensor(te.input('input_ids').type, ids, [rows, tokenizer.maxLength]) }, ['last_hidden_state', LAST_LAYER_ROLE]);
  const y = toFloat32(out.last_hidden_state!);
  const width = out.last_hidden_state!.dims[2]!;
  if (out[LAST_LAYER_ROLE]!.dims.join() !== out.last_hidden_state!.dims.join()) {
    throw new GraphSessionError(`${te.path}: ${lastName} is [${out[LAST_LAYER_ROLE]!.dims.join(', ')}], last_hidden_state [${out.last_hidden_state!.dims.join(', ')}]: they must match for clipSkip`);
  }
  const x = standardise(toFloat32(out[LAST_LAYER_ROLE]!), width);
  const tokens = y.length / width;
  const scale = new Float32Array(width);
  const bias = new Float32Array(width);
  let worst = 0;
  let largest = 0;
  for (let c = 0; c < width; c++) {
    let mx = 0;
    let my = 0;
    for (let t = 0; t < tokens; t++) {
      mx += x[t * width + c]!;
      my += y[t * width + c]!;
    }
    mx /= tokens;
    my /= tokens;
    let sxx = 0;
    let sxy = 0;
    for (let t = 0; t < tokens; t++) {
      const dx = x[t * width + c]! - mx;
      sxx += dx * dx;
      sxy += dx * (y[t * width + c]! - my);
    }
    // A channel that never varies cannot show its scale; CLIP's all vary with token and position.
    if (!(sxx > 1e-6 * tokens)) throw new GraphSessionError(`${te.path}: channel ${c} of ${lastName} does not vary over the calibration prompts, so the final layer norm cannot be measured for clipSkip`);
    scale[c] = sxy / sxx;
    bias[c] = my - scale[c]! * mx;
    for (let t = 0; t < tokens; t++) {
      const v = y[t * width + c]!;
      largest = Math.max(largest, Math.abs(v));
      worst = Math.max(worst, Math.abs(scale[c]! * x[t * width + c]! + bias[c]! - v));
    }
  }
  // fp16 outputs carry ~1e-3 relative rounding; anything that is not a layer norm misses by far more.
  const tolerance = (te.output('last_hidden_state').type === 'float16' ? 1e-2 : 1e-3) * Math.max(1, largest);
  if (worst > tolerance) {
    throw new GraphSessionError(
      `${te.path}: last_hidden_state is not a layer norm of ${lastName} (off by up to ${worst.toPrecision(3)}), so the final layer norm clipSkip needs cannot be measured; ` +
        `is ${lastName} the last layer's output before final_layer_norm?`,
    );
  }
  return { scale, bias };
}

/** The chosen layer's hidden states [rows, tokens, width] through the final layer norm (a new array). */
export function finalLayerNorm(hidden: Float32Array, width: number, layer: ClipSkipLayer): Float32Array {
  const x = standardise(hidden, width);
  const out = new Float32Array(hidden.length);
  for (let i = 0; i < out.length; i++) out[i] = x[i]! * layer.scale[i % width]! + layer.bias[i % width]!;
  return out;
}
