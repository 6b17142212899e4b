/**
 * Fuses a ControlNet graph and a ControlNet-ready UNet graph (the separate pair OnnxStack/Amuse
 * and similar exporters write: 13 residuals out of one, into the other) into one graph of the
 * `denoiser` role, so a denoising step is one session.run and the residuals never leave ONNX
 * Runtime.
 *
 * The fused graph (names are the role's):
 *   in  sample                float32 [B,4,h,w]         the B images' latents (scaled model input)
 *       timestep              the UNet's dtype, [1] (or a scalar when the UNet takes one)
 *       encoder_hidden_states float32 [R,77,C]          R = 2: [uncond, cond]; R = 1: cond alone
 *       controlnet_cond       uint8   [1,3,8h,8w]       the control image, RGB 0..255, shared by the batch
 *       conditioning_scale    float32 []                0 outside the control window
 *       guidance_scale        float32 []                classifier-free guidance
 *       timestep_cond         float32 [B,D]             only when the UNet has one (a full LCM checkpoint):
 *                                                       its guidance embedding (pipeline/lcm-guidance.ts),
 *                                                       spread over the R text rows like the latents; such
 *                                                       a model is run with R = 1, so nothing is doubled
 *   out noise_pred            float32 [B,4,h,w]         u + g·(c − u) (R = 2) or c (R = 1)
 *
 * Inside: the latents and text rows are spread to the R·B-row batch ([uncond × B ‖ cond × B]),
 * the control image is scaled to [0,1] and repeated, each is cast to what each graph takes
 * (fp16 graphs with fp16 inputs get Cast nodes), the ControlNet's residuals are multiplied by the
 * scale when it has no conditioning_scale input, cast to the UNet's residual dtype when the two
 * differ, and wired to the UNet's residual inputs; the UNet's output is split into its uncond and
 * cond halves and guided. Every name of the two graphs is prefixed (`controlnet/`, `unet/`), so
 * nothing collides; subgraphs and model-local functions come along.
 *
 * Taking uint8 control pixels and B latents keeps what crosses into ONNX Runtime per step small:
 * about 2.6 MB at 768×768 with one image (the control image alone would be 7 MB as float32; the
 * separate pair moves ~250 MB with its residuals).
 */
import type { ModelProto, NodeProto, GraphProto, TensorProto, ValueInfoProto } from './proto.ts';
import { DataType, elementTypeOf, newModel, node, tensor, tensorTypeOf, valueInfo, type ElementType } from './proto.ts';
import { CONTROL_RESIDUALS } from './control-residuals.ts';
import { create, equals } from '@bufbuild/protobuf';
import { FunctionProtoSchema, GraphProtoSchema, OperatorSetIdProtoSchema, StringStringEntryProtoSchema } from 'onnx-buf';

export class FuseError extends Error {
  override readonly name = 'FuseError';
}

/** Role → the export's name, where it differs from the role (as the manifest's graphs.*.inputs/outputs). */
export interface NameMap {
  readonly inputs?: Readonly<Record<string, string>>;
  readonly outputs?: Readonly<Record<string, string>>;
}

export interface FuseSource {
  readonly model: ModelProto;
  /** For messages: the file it came from. */
  readonly file: string;
  readonly names?: NameMap;
}

const RESIDUAL_ROLES = CONTROL_RESIDUALS.map((r) => r.role);
const CONTROLNET_INPUTS = ['sample', 'timestep', 'encoder_hidden_states', 'controlnet_cond', 'conditioning_scale'] as const;
/** timestep_cond (a full LCM UNet's guidance embedding) is optional: it becomes an input of the fused graph. */
const UNET_INPUTS = ['sample', 'timestep', 'encoder_hidden_states', ...RESIDUAL_ROLES, 'timestep_cond'] as const;

interface Io {
  readonly name: string;
  readonly type: number;
  readonly dims: readonly (number | string | undefined)[];
}

/** A graph's inputs (initializers listed as inputs, as IR < 4 does, left out) and outputs by name. */
function ioOf(src: FuseSource): { inputs: Map<string, Io>; outputs: Map<string, Io> } {
  const g = src.model.graph!;
  const inits = new Set(g.initializer.map((t) => t.name));
  const read = (v: ValueInfoProto): Io => {
    const t = tensorTypeOf(v);
    if (!t) throw new FuseError(`${src.file}: '${v.name}' is not a tensor`);
    return { name: v.name, type: t.type, dims: t.dims };
  };
  return {
    inputs: new Map(g.input.filter((v) => !inits.has(v.name)).map((v) => [v.name, read(v)])),
    outputs: new Map(g.output.map((v) => [v.name, read(v)])),
  };
}

/** The graph's value for each role, checked to exist; unknown graph inputs are refused. */
function bindRoles(src: FuseSource, what: string, inputRoles: readonly string[], outputRoles: readonly string[], optional: readonly string[]): { inputs: Map<string, Io>; outputs: Map<string, Io> } {
  const io = ioOf(src);
  const bind = (side: 'input' | 'output', roles: readonly string[], available: Map<string, Io>, names: Readonly<Record<string, string>> | undefined) => {
    const out = new Map<string, Io>();
    for (const role of roles) {
      const name = names?.[role] ?? role;
      const v = available.get(name);
      if (!v) {
        if (optional.includes(role)) continue;
        throw new FuseError(`${src.file}: the ${what} needs an ${side} '${name}' (role ${role}); its ${side}s are ${[...available.keys()].map((n) => `'${n}'`).join(', ')}`);
      }
      if (!elementTypeOf(v.type)) throw new FuseError(`${src.file}: ${side} '${name}' has ONNX data type ${v.type}, which the fused graph cannot feed`);
      out.set(role, v);
    }
    return out;
  };
  const inputs = bind('input', inputRoles, io.inputs, src.names?.inputs);
  const outputs = bind('output', outputRoles, io.outputs, src.names?.outputs);
  const fed = new Set([...inputs.values()].map((v) => v.name));
  const unfed = [...io.inputs.keys()].filter((n) => !fed.has(n));
  if (unfed.length > 0) throw new FuseError(`${src.file}: input${unfed.length > 1 ? 's' : ''} ${unfed.map((n) => `'${n}'`).join(', ')} of the ${what} would not be fed by the fused graph`);
  return { inputs, outputs };
}

/** Default-domain and other opsets of both graphs; one version per domain. */
function mergeOpsets(a: FuseSource, b: FuseSource): ModelProto['opsetImport'] {
  const versions = new Map<string, { version: bigint; file: string }>();
  for (const src of [a, b]) {
    for (const o of src.model.opsetImport) {
      const seen = versions.get(o.domain);
      if (seen && seen.version !== o.version) {
        throw new FuseError(
          `the two graphs use different versions of opset '${o.domain || 'ai.onnx'}': ${seen.version} in ${seen.file}, ${o.version} in ${src.file}; convert one (onnx.version_converter) so both use the same`,
        );
      }
      versions.set(o.domain, { version: o.version, file: src.file });
    }
  }
  // The glue (Squeeze/Unsqueeze with their axes as an input) is opset 13's, and ONNX Runtime refuses
  // a fused graph at 13 that loads at 14: below 14 it is refused here, not at the worker's start.
  const main = versions.get('') ?? versions.get('ai.onnx');
  if (main && main.version < MIN_FUSE_OPSET) {
    throw new FuseError(
      `${a.file} and ${b.file} use opset ${main.version} of 'ai.onnx'; fusing needs ${MIN_FUSE_OPSET} or later: convert both (onnx.version_converter) or re-export them with opset_version=${MIN_FUSE_OPSET} or later`,
    );
  }
  return [...versions].map(([domain, { version }]) => create(OperatorSetIdProtoSchema, { domain, version }));
}

/** The lowest default-domain opset a fused graph is made at (measured: 13 made a graph ONNX Runtime refused). */
const MIN_FUSE_OPSET = 14n;

// ---------------------------------------------------------------------------------------------
// Renaming

type Rename = (name: string) => string;

function renameGraph(g: GraphProto, rename: Rename): void {
  for (const n of g.node) renameNode(n, rename);
  for (const t of g.initializer) t.name = rename(t.name);
  for (const v of [...g.input, ...g.output, ...g.valueInfo]) v.name = rename(v.name);
}

function renameNode(n: NodeProto, rename: Rename): void {
  n.input = n.input.map((v) => (v === '' ? v : rename(v)));
  n.output = n.output.map((v) => (v === '' ? v : rename(v)));
  if (n.name) n.name = rename(n.name);
  for (const a of n.attribute) {
    if (a.g) renameGraph(a.g, rename);
    for (const sub of a.graphs) renameGraph(sub, rename);
  }
}

// ---------------------------------------------------------------------------------------------
// The glue nodes

class Glue {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private n = 0;

  /** `prefix` keeps each glue's names apart from the other glues' and from the two graphs'. */
  constructor(private readonly prefix: string) {}

  private fresh(hint: string): string {
    return `${this.prefix}${hint}_${this.n++}`;
  }

  op(opType: string, inputs: readonly string[], attrs: Parameters<typeof node>[3] = {}, hint = opType): string {
    const out = this.fresh(hint);
    this.nodes.push(node(opType, inputs, [out], attrs, `${out}_node`));
    return out;
  }

  i64(values: readonly number[]): string {
    const name = this.fresh('const');
    this.initializers.push(tensor(name, 'int64', [values.length], values));
    return name;
  }

  f32(value: number): string {
    const name = this.fresh('const');
    this.initializers.push(tensor(name, 'float32', [], [value]));
    return name;
  }

  /** `value` (of ONNX type `from`) as type `to`: itself, or through a Cast. */
  cast(value: string, from: number, to: number): string {
    return from === to ? value : this.op('Cast', [value], { to }, 'cast');
  }

  /** Axis range [start, end) of a shape vector. */
  dims(shape: string, start: number, end: number): string {
    return this.op('Slice', [shape, this.i64([start]), this.i64([end]), this.i64([0])], {}, 'dims');
  }
}

// ---------------------------------------------------------------------------------------------
// Fusing

export interface FuseOptions {
  /** Written into the model's metadata (where the graphs came from). */
  readonly provenance?: Readonly<Record<string, string>>;
  /**
   * 'fold' (default): the layout above. 'outside': diffusers' fused layout (CFG left to the
   * caller: sample, encoder_hidden_states and noise_pred have all 2B rows, controlnet_cond is
   * float32 [1, 2B, 3, H, W] in [0,1], conditioning_scale [1, 1]).
   */
  readonly guidance?: 'fold' | 'outside';
}

/** The fused model (a new object; the sources are consumed: their graphs are renamed in place). */
export function fuseControlNet(controlnet: FuseSource, unet: FuseSource, options: FuseOptions = {}): ModelProto {
  const cn = bindRoles(controlnet, 'ControlNet', CONTROLNET_INPUTS, RESIDUAL_ROLES, ['conditioning_scale']);
  const un = bindRoles(unet, 'UNet', UNET_INPUTS, ['out_sample'], ['timestep_cond']);
  const opsetImport = mergeOpsets(controlnet, unet);

  const F = DataType.FLOAT;
  const glue = new Glue('fuse/');
  const tail = new Glue('fuse/cfg/');
  // Both graphs' own inputs become the glue's values; everything else gets a prefix.
  const wired = new Map<string, string>(); // prefixed-graph input name → glue value
  const prefixer = (prefix: string, inputs: Map<string, Io>): Rename => {
    const own = new Set([...inputs.values()].map((v) => v.name));
    return (name) => (own.has(name) ? `${prefix}input/${name}` : `${prefix}${name}`);
  };
  const cnRename = prefixer('controlnet/', cn.inputs);
  const unRename = prefixer('unet/', un.inputs);

  // Fused inputs.
  const unTimestep = un.inputs.get('timestep')!;
  const timestepType = elementTypeOf(unTimestep.type)!;
  const timestepScalar = unTimestep.dims.length === 0;
  const folded = options.guidance !== 'outside';
  const hiddenWidth = un.inputs.get('encoder_hidden_states')!.dims[2] ?? 'hidden';
  const inputs: ValueInfoProto[] = [
    valueInfo('sample', 'float32', ['batch', 4, 'height', 'width']),
    valueInfo('timestep', timestepType, timestepScalar ? [] : [1]),
    ...(folded
      ? [
          valueInfo('encoder_hidden_states', 'float32', ['text_rows', 'sequence', hiddenWidth]),
          valueInfo('controlnet_cond', 'uint8', [1, 3, 'image_height', 'image_width']),
          valueInfo('conditioning_scale', 'float32', []),
          valueInfo('guidance_scale', 'float32', []),
        ]
      : [
          valueInfo('encoder_hidden_states', 'float32', ['batch', 'sequence', hiddenWidth]),
          valueInfo('controlnet_cond', 'float32', [1, 'batch', 3, 'image_height', 'image_width']),
          valueInfo('conditioning_scale', 'float32', [1, 1]),
        ]),
  ];
  const unCond = un.inputs.get('timestep_cond');
  if (unCond) inputs.push(valueInfo('timestep_cond', 'float32', ['batch', unCond.dims[1] ?? 'time_cond_proj_dim']));

  // 1. The R·B-row batch: [uncond × B ‖ cond × B] (given as such without folding).
  const sampleShape = glue.op('Shape', ['sample']);
  const textShape = glue.op('Shape', ['encoder_hidden_states']);
  const B = glue.dims(sampleShape, 0, 1);
  const R = glue.dims(textShape, 0, 1);
  const spread = (x: string, shape: string, repeat: string, at: number): string => {
    // x [n, ...] → [R, B, ...] (`repeat` along the new axis `at`) → [R·B, ...]
    const rank = at === 0 ? 4 : 3;
    const ones = glue.i64(new Array<number>(rank).fill(1));
    const target = at === 0 ? glue.op('Concat', [repeat, ones], { axis: 0 }) : glue.op('Concat', [glue.i64([1]), repeat, glue.i64([1, 1])], { axis: 0 });
    const expanded = glue.op('Expand', [glue.op('Unsqueeze', [x, glue.i64([at])]), target]);
    return glue.op('Reshape', [expanded, glue.op('Concat', [glue.i64([-1]), glue.dims(shape, 1, rank === 4 ? 4 : 3)], { axis: 0 })]);
  };
  const sampleN = folded ? spread('sample', sampleShape, R, 0) : 'sample';
  const textN = folded ? spread('encoder_hidden_states', textShape, B, 1) : 'encoder_hidden_states';
  const N = folded ? glue.dims(glue.op('Shape', [sampleN]), 0, 1) : B;
  // 2. The control image: 0..255 → [0,1] (Div, so the value is the float32 nearest v/255), one per row.
  const cond = folded
    ? glue.op('Expand', [glue.op('Div', [glue.cast('controlnet_cond', DataType.UINT8, F), glue.f32(255)]), glue.op('Concat', [N, glue.i64([1, 1, 1])], { axis: 0 })])
    : glue.op('Squeeze', ['controlnet_cond', glue.i64([0])]);
  const scale = folded ? 'conditioning_scale' : glue.op('Reshape', ['conditioning_scale', glue.i64([])]);

  /** The timestep as a graph takes it: its dtype, and a scalar, [1] or one per row. */
  const timestepFor = (io: Io): string => {
    let t = glue.cast('timestep', unTimestep.type, io.type);
    if (io.dims.length === 0) return timestepScalar ? t : glue.op('Reshape', [t, glue.i64([])]);
    if (timestepScalar) t = glue.op('Reshape', [t, glue.i64([1])]);
    return io.dims[0] === 1 ? t : glue.op('Expand', [t, N]);
  };
  const feed = (inputsOf: Map<string, Io>, rename: Rename, role: string, value: string, valueType: number): void => {
    const io = inputsOf.get(role);
    if (io) wired.set(rename(io.name), glue.cast(value, valueType, io.type));
  };

  // 3. ControlNet inputs.
  feed(cn.inputs, cnRename, 'sample', sampleN, F);
  feed(cn.inputs, cnRename, 'encoder_hidden_states', textN, F);
  feed(cn.inputs, cnRename, 'controlnet_cond', cond, F);
  wired.set(cnRename(cn.inputs.get('timestep')!.name), timestepFor(cn.inputs.get('timestep')!));
  const cnScale = cn.inputs.get('conditioning_scale');
  if (cnScale) {
    const s = glue.cast(scale, F, cnScale.type);
    wired.set(cnRename(cnScale.name), cnScale.dims.length === 0 ? s : glue.op('Reshape', [s, glue.i64(cnScale.dims.map(() => 1))]));
  }
  // 4. UNet inputs.
  feed(un.inputs, unRename, 'sample', sampleN, F);
  feed(un.inputs, unRename, 'encoder_hidden_states', textN, F);
  wired.set(unRename(unTimestep.name), timestepFor(unTimestep));
  if (unCond) {
    // [B, D] → [R·B, D] in the batch's row order ([uncond × B ‖ cond × B]), as the latents.
    const spreadCond = (): string => {
      const rows = glue.op('Expand', [glue.op('Unsqueeze', ['timestep_cond', glue.i64([0])]), glue.op('Concat', [R, glue.i64([1, 1])], { axis: 0 })]);
      return glue.op('Reshape', [rows, glue.op('Concat', [glue.i64([-1]), glue.dims(glue.op('Shape', ['timestep_cond']), 1, 2)], { axis: 0 })]);
    };
    feed(un.inputs, unRename, 'timestep_cond', folded ? spreadCond() : 'timestep_cond', F);
  }

  // 5. The seam: residuals (× scale when the ControlNet has no scale input) → the UNet's dtype.
  const seam = new Glue('fuse/seam/');
  for (const role of RESIDUAL_ROLES) {
    const out = cn.outputs.get(role)!;
    let value = cnRename(out.name);
    if (!cnScale) value = seam.op('Mul', [value, seam.cast(scale, F, out.type)], {}, 'scaled');
    const target = un.inputs.get(role)!;
    wired.set(unRename(target.name), seam.cast(value, out.type, target.type));
  }

  // 6. Guidance: noise_pred = u + g·(c − u) with u the first B rows and c the last B rows.
  const outSample = un.outputs.get('out_sample')!;
  const pred = tail.cast(unRename(outSample.name), outSample.type, F);
  let guided = pred;
  if (folded) {
    const u = tail.op('Slice', [pred, tail.i64([0]), B, tail.i64([0])], {}, 'uncond');
    const c = tail.op('Slice', [pred, tail.op('Sub', [N, B]), N, tail.i64([0])], {}, 'cond');
    guided = tail.op('Add', [u, tail.op('Mul', ['guidance_scale', tail.op('Sub', [c, u])])], {}, 'guided');
  }
  tail.nodes.push(node('Identity', [guided], ['noise_pred'], {}, 'fuse/noise_pred'));

  // The two graphs, renamed; their inputs now read the glue's values.
  const cnGraph = controlnet.model.graph!;
  const unGraph = unet.model.graph!;
  renameGraph(cnGraph, (n) => wired.get(cnRename(n)) ?? cnRename(n));
  renameGraph(unGraph, (n) => wired.get(unRename(n)) ?? unRename(n));
  const keepValueInfo = (g: GraphProto, ios: Iterable<Io>, rename: Rename): ValueInfoProto[] => {
    const dropped = new Set([...ios].map((v) => rename(v.name)));
    return [...g.valueInfo, ...g.output].filter((v) => !dropped.has(v.name) && !wired.has(v.name));
  };

  const graph = create(GraphProtoSchema, {
    name: 'qr-art fused denoiser',
    node: [...glue.nodes, ...cnGraph.node, ...seam.nodes, ...unGraph.node, ...tail.nodes],
    initializer: [...glue.initializers, ...cnGraph.initializer, ...seam.initializers, ...unGraph.initializer, ...tail.initializers],
    input: inputs,
    output: [valueInfo('noise_pred', 'float32', ['batch', 4, 'height', 'width'])],
    valueInfo: [...keepValueInfo(cnGraph, [], cnRename), ...keepValueInfo(unGraph, un.outputs.values(), (n) => n)],
    docString: `UNet + ControlNet fused by \`qr-art models fuse\` (src/onnx/fuse.ts): one call per denoising step, classifier-free guidance ${folded ? 'inside' : 'left to the caller'}.`,
  });
  const functions = mergeFunctions(controlnet, unet);
  const irVersion = [controlnet.model.irVersion, unet.model.irVersion].reduce((a, b) => (a > b ? a : b));
  const metadata = Object.entries({ 'qr-art.role': 'denoiser', ...options.provenance }).map(([key, value]) => create(StringStringEntryProtoSchema, { key, value }));
  return newModel({ irVersion, opsetImport, producerName: 'qr-art models fuse', producerVersion: '1', graph, functions, metadataProps: metadata });
}

/** Model-local functions of both; one both define alike is kept once, a name both define differently is refused. */
function mergeFunctions(a: FuseSource, b: FuseSource): ModelProto['functions'] {
  const out = [...a.model.functions];
  const key = (f: ModelProto['functions'][number]) => `${f.domain}::${f.name}::${f.overload}`;
  const seen = new Map(out.map((f) => [key(f), f]));
  for (const f of b.model.functions) {
    const same = seen.get(key(f));
    if (same && equals(FunctionProtoSchema, same, f)) continue;
    if (same) throw new FuseError(`both graphs define the function ${f.domain}.${f.name}, differently; rename one before fusing`);
    out.push(f);
  }
  return out;
}

export type { ElementType };
