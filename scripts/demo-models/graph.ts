/**
 * A small graph-building DSL over onnx-writer.ts: values are tensor names, `op` appends a node and
 * returns its output name(s), constants become initializers.
 *
 *   const g = new GraphBuilder('demo');
 *   const x = g.input('sample', 'float32', ['batch', 4, 'height', 'width']);
 *   const y = g.op('Mul', [x, g.constF32('k', [1], [0.5])]);
 *   g.output(y, 'out_sample', 'float32', ['batch', 4, 'height', 'width']);
 *   const bytes = g.build();
 */
import { dataTypeOf } from '../../src/onnx/proto.ts';
import {
  encodeModel,
  type AttributeDef,
  type Dim,
  type DType,
  type NodeDef,
  type TensorDef,
  type ValueInfoDef,
} from './onnx-writer.ts';

/** A tensor in the graph, by name. The empty string stands for an omitted optional input. */
export type Value = string;

/** Attribute values: integers, strings and integer lists are plain; floats are wrapped. */
export type Attr =
  | number
  | string
  | readonly number[]
  | { readonly float: number }
  | { readonly floats: readonly number[] }
  | { readonly tensor: TensorDef };

export const float = (value: number): Attr => ({ float: value });
export const floats = (value: readonly number[]): Attr => ({ floats: value });

function toAttribute(name: string, a: Attr): AttributeDef {
  if (typeof a === 'string') return { name, kind: 'string', value: a };
  if (typeof a === 'number') {
    if (!Number.isInteger(a)) throw new Error(`attribute ${name}: ${a} is not an integer; wrap floats with float()`);
    return { name, kind: 'int', value: a };
  }
  if (Array.isArray(a)) {
    const ints = a as readonly number[];
    if (!ints.every(Number.isInteger)) throw new Error(`attribute ${name}: use floats() for float lists`);
    return { name, kind: 'ints', value: ints };
  }
  if ('float' in a) return { name, kind: 'float', value: a.float };
  if ('floats' in a) return { name, kind: 'floats', value: a.floats };
  if ('tensor' in a) return { name, kind: 'tensor', value: a.tensor };
  throw new Error(`attribute ${name}: unsupported value`);
}

export class GraphBuilder {
  private readonly nodes: NodeDef[] = [];
  private readonly initializers: TensorDef[] = [];
  private readonly inputs: ValueInfoDef[] = [];
  private readonly outputs: ValueInfoDef[] = [];
  private readonly names = new Set<string>();
  private counter = 0;

  constructor(readonly name = 'graph') {}

  private claim(name: string): string {
    if (this.names.has(name)) throw new Error(`duplicate tensor name ${name}`);
    this.names.add(name);
    return name;
  }

  private fresh(prefix: string): string {
    let name: string;
    do name = `${prefix}_${this.counter++}`;
    while (this.names.has(name));
    return this.claim(name);
  }

  input(name: string, dtype: DType, dims: readonly Dim[], docString?: string): Value {
    this.inputs.push({ name: this.claim(name), dtype, dims, docString });
    return name;
  }

  /** Declares `value` as a graph output named `name` (an Identity renames it when needed). */
  output(value: Value, name: string, dtype: DType, dims: readonly Dim[], docString?: string): void {
    if (value !== name) {
      this.nodes.push({ opType: 'Identity', inputs: [value], outputs: [this.claim(name)], name: `${name}_identity` });
    }
    this.outputs.push({ name, dtype, dims, docString });
  }

  /** Appends a node with `outputs` results. */
  ops(opType: string, inputs: readonly Value[], attrs: Record<string, Attr> = {}, outputs = 1): Value[] {
    const outs = Array.from({ length: outputs }, () => this.fresh(opType));
    this.nodes.push({
      opType,
      inputs,
      outputs: outs,
      name: `${outs[0]}_node`,
      attributes: Object.entries(attrs).map(([k, v]) => toAttribute(k, v)),
    });
    return outs;
  }

  /** Appends a single-output node. */
  op(opType: string, inputs: readonly Value[], attrs: Record<string, Attr> = {}): Value {
    return this.ops(opType, inputs, attrs, 1)[0]!;
  }

  private constant(dtype: TensorDef['dtype'], name: string | undefined, dims: readonly number[], data: ArrayLike<number>): Value {
    const n = name ? this.claim(name) : this.fresh('const');
    const values = dtype === 'int64' ? Array.from(data, (v) => BigInt(v)) : Array.from(data);
    this.initializers.push({ name: n, dtype, dims: [...dims], data: values as ArrayLike<number> | ArrayLike<bigint> });
    return n;
  }

  constF32(name: string | undefined, dims: readonly number[], data: ArrayLike<number>): Value {
    return this.constant('float32', name, dims, data);
  }

  constI64(name: string | undefined, dims: readonly number[], data: ArrayLike<number>): Value {
    return this.constant('int64', name, dims, data);
  }

  constI32(name: string | undefined, dims: readonly number[], data: ArrayLike<number>): Value {
    return this.constant('int32', name, dims, data);
  }

  /** Scalar float32 constant. */
  f(value: number): Value {
    return this.constF32(undefined, [], [value]);
  }

  /** 1-D int64 constant (shapes, axes, indices). */
  i64(values: readonly number[]): Value {
    return this.constI64(undefined, [values.length], values);
  }

  add(a: Value, b: Value): Value {
    return this.op('Add', [a, b]);
  }
  sub(a: Value, b: Value): Value {
    return this.op('Sub', [a, b]);
  }
  mul(a: Value, b: Value): Value {
    return this.op('Mul', [a, b]);
  }
  div(a: Value, b: Value): Value {
    return this.op('Div', [a, b]);
  }

  /** x[..., start:end] along `axis`. */
  slice(x: Value, axis: number, start: number, end: number): Value {
    return this.op('Slice', [x, this.i64([start]), this.i64([end]), this.i64([axis])]);
  }

  reshape(x: Value, shape: readonly number[]): Value {
    return this.op('Reshape', [x, this.i64(shape)]);
  }

  unsqueeze(x: Value, axes: readonly number[]): Value {
    return this.op('Unsqueeze', [x, this.i64(axes)]);
  }

  /** ReduceSum takes axes as an input from opset 13; ReduceMean/Max keep the attribute until 18. */
  reduceSum(x: Value, axes: readonly number[], keepdims = 1): Value {
    return this.op('ReduceSum', [x, this.i64(axes)], { keepdims });
  }

  cast(x: Value, to: DType): Value {
    return this.op('Cast', [x], { to: dataTypeOf(to) });
  }

  /** k×k average pool with stride k (ceil: a partial edge cell is pooled too). */
  avgPool(x: Value, k: number): Value {
    return this.op('AveragePool', [x], { kernel_shape: [k, k], strides: [k, k], ceil_mode: 1 });
  }

  /** Bilinear resize of x to `sizes` ([N,C,h,w] int64). */
  resizeTo(x: Value, sizes: Value): Value {
    return this.op('Resize', [x, '', '', sizes], { mode: 'linear' });
  }

  /** The [N,C,h,w] sizes `shape` holds, with C replaced by `channels`. */
  sizesWithChannels(shape: Value, channels: number): Value {
    return this.op('Concat', [this.slice(shape, 0, 0, 1), this.i64([channels]), this.slice(shape, 0, 2, 4)], { axis: 0 });
  }

  build(opts: { docString?: string; opset?: number } = {}): Uint8Array {
    return encodeModel({
      graph: {
        name: this.name,
        nodes: this.nodes,
        initializers: this.initializers,
        inputs: this.inputs,
        outputs: this.outputs,
      },
      opset: opts.opset ?? 17,
      docString: opts.docString,
    });
  }
}
