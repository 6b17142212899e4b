/**
 * Gives a ControlNet graph that has no `conditioning_scale` input one: every residual output is
 * multiplied by it inside the graph, so qrStrength (and the control window, which feeds 0 or
 * skips the ControlNet) works on it, and it can run as a separate pair or as an extra ControlNet
 * of the manifest. `qr-art models scale-controlnet` writes the result (src/cli/models.ts).
 *
 * Some ControlNet exports have no scale input: OnnxStack's converter traces the ControlNet with
 * the scale given as a Python float (OnnxStack.Converter/ControlNet/models.py), which a trace
 * can bake into the graph as a constant. Whatever constant was baked in stays (it is 1 in the
 * exports we know of); the new input multiplies what comes out.
 *
 * The new input is a float32 scalar named `conditioning_scale`; the product is taken in each
 * residual's own dtype (a Cast of the scale when the residual is fp16). Weights are untouched:
 * external data is followed and rewritten by model-file.ts.
 */
import { DataType, node, tensorTypeOf, valueInfo, type GraphProto, type ModelProto, type NodeProto } from './proto.ts';
import { CONTROL_RESIDUALS } from './control-residuals.ts';

export class ScaleWrapError extends Error {
  override readonly name = 'ScaleWrapError';
}

const SCALE = 'conditioning_scale';

/** Renames every use and definition of `from` in the graph (subgraphs' uses included: they may read outer names). */
function renameValue(g: GraphProto, from: string, to: string, outputsToo: boolean): void {
  for (const n of g.node) {
    n.input = n.input.map((v) => (v === from ? to : v));
    if (outputsToo) n.output = n.output.map((v) => (v === from ? to : v));
    for (const a of n.attribute) for (const sub of [...(a.g ? [a.g] : []), ...a.graphs]) renameValue(sub, from, to, false);
  }
  for (const t of g.initializer) if (outputsToo && t.name === from) t.name = to;
  for (const v of [...g.valueInfo, ...(outputsToo ? g.input : [])]) if (v.name === from) v.name = to;
}

/**
 * Adds the scale input to `model` in place and returns it. `file` is for messages; `outputs`
 * maps residual roles to the export's names where they differ. Refuses a graph that already has
 * a conditioning_scale input.
 */
export function addScaleInput(model: ModelProto, file: string, outputs: Readonly<Record<string, string>> = {}): ModelProto {
  const g = model.graph!;
  const inits = new Set(g.initializer.map((t) => t.name));
  if (g.input.some((v) => v.name === SCALE && !inits.has(v.name))) throw new ScaleWrapError(`${file}: the ControlNet already has a ${SCALE} input; it needs no wrapping`);
  // A constant the trace named conditioning_scale (the baked scale) keeps its value under another name.
  if (inits.has(SCALE) || g.node.some((n) => n.output.includes(SCALE))) renameValue(g, SCALE, `${SCALE}/baked`, true);
  const nodes: NodeProto[] = [];
  for (const r of CONTROL_RESIDUALS) {
    const name = outputs[r.role] ?? r.role;
    const out = g.output.find((v) => v.name === name);
    if (!out) throw new ScaleWrapError(`${file}: the ControlNet has no output '${name}' (role ${r.role}); its outputs are ${g.output.map((v) => `'${v.name}'`).join(', ')}`);
    const type = tensorTypeOf(out)?.type;
    if (type !== DataType.FLOAT && type !== DataType.FLOAT16) throw new ScaleWrapError(`${file}: output '${name}' is not float32 or float16`);
    const unscaled = `${name}/unscaled`;
    // The graph's own value becomes `unscaled`; the output is the product.
    renameValue(g, name, unscaled, true);
    let scale = SCALE;
    if (type === DataType.FLOAT16) {
      scale = `${SCALE}/fp16`;
      if (!nodes.some((n) => n.output[0] === scale)) nodes.push(node('Cast', [SCALE], [scale], { to: DataType.FLOAT16 }, 'scale-controlnet/cast'));
    }
    nodes.push(node('Mul', [unscaled, scale], [name], {}, `scale-controlnet/${r.role}`));
  }
  g.node.push(...nodes);
  g.input.push(valueInfo(SCALE, 'float32', []));
  model.producerName = model.producerName ? `${model.producerName} + qr-art models scale-controlnet` : 'qr-art models scale-controlnet';
  return model;
}
