/**
 * A text encoder shaped like a real CLIP export with output_hidden_states, for the clipSkip
 * tests: hidden_states.0 (embeddings) … hidden_states.3 (three elementwise "layers"), and
 * last_hidden_state = LayerNormalization(hidden_states.3) with a non-trivial per-channel scale
 * and bias (FINAL_NORM_SCALE, FINAL_NORM_BIAS; epsilon 1e-5, CLIP's), as optimum writes a CLIP
 * text model at opset 17. `finalLayerNorm: false` writes last_hidden_state as 2 · hidden_states.3
 * instead: a graph whose last_hidden_state is not a layer norm of its last hidden state.
 *
 * Contract: input_ids int32 [B,77] → last_hidden_state, hidden_states.0 … .3 float32 [B,77,768],
 * pooler_output float32 [B,768]. Not meant to give sensible images: only its conditioning is read.
 */
import { float, GraphBuilder } from './graph.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

const WIDTH = 768;
const LENGTH = 77;
const values = (seed: number, lo: number, hi: number): number[] => {
  const r = mulberry32(seed);
  return Array.from({ length: WIDTH }, () => lo + (hi - lo) * r());
};
export const FINAL_NORM_SCALE = values(11, 0.5, 1.5);
export const FINAL_NORM_BIAS = values(12, -0.3, 0.3);
export const FINAL_NORM_EPS = 1e-5;

export function buildLayerNormTextEncoder(options: { finalLayerNorm?: boolean } = {}): Uint8Array {
  const g = new GraphBuilder('text_encoder');
  const ids = g.cast(g.unsqueeze(g.input('input_ids', 'int32', ['batch', LENGTH]), [2]), 'float32');
  const freq = g.constF32(undefined, [WIDTH], values(1, 0.3, 3));
  const phase = g.constF32(undefined, [WIDTH], values(2, 0, 6.28));
  const positions = g.constF32(undefined, [LENGTH, 1], Array.from({ length: LENGTH }, (_, i) => i / LENGTH));
  const embeddings = g.add(g.op('Sin', [g.add(g.mul(ids, freq), phase)]), g.mul(positions, g.constF32(undefined, [WIDTH], values(3, -1, 1))));
  const layer1 = g.mul(g.op('Tanh', [g.add(g.mul(embeddings, g.f(1.3)), g.f(0.2))]), g.f(2));
  const layer2 = g.add(layer1, g.mul(g.op('Sin', [g.mul(layer1, g.f(0.7))]), g.f(0.5)));
  const layer3 = g.add(g.mul(layer2, g.f(1.5)), g.op('Cos', [embeddings]));
  const scale = g.constF32('final_layer_norm.weight', [WIDTH], FINAL_NORM_SCALE);
  const bias = g.constF32('final_layer_norm.bias', [WIDTH], FINAL_NORM_BIAS);
  const last = (options.finalLayerNorm ?? true) ? g.op('LayerNormalization', [layer3, scale, bias], { axis: -1, epsilon: float(FINAL_NORM_EPS) }) : g.mul(layer3, g.f(2));
  const dims = ['batch', LENGTH, WIDTH] as const;
  g.output(last, 'last_hidden_state', 'float32', dims);
  g.output(g.op('ReduceMean', [last], { axes: [1], keepdims: 0 }), 'pooler_output', 'float32', ['batch', WIDTH]);
  [embeddings, layer1, layer2, layer3].forEach((v, i) => g.output(v, `hidden_states.${i}`, 'float32', dims));
  return g.build({ docString: 'qr-art fixture: a CLIP-like text encoder with hidden states and a real final LayerNormalization; see scripts/demo-models/layer-norm-text-encoder.ts' });
}
