/**
 * ONNX messages (onnx-buf: the ModelProto family generated from onnx.proto by Buf's protoc-gen-es,
 * on @bufbuild/protobuf) and small constructors for what our code adds to graphs: nodes,
 * attributes, initializers and typed values. Fields this code never reads are still carried
 * through a decode and re-encode (protobuf-es keeps unknown fields), so a graph we rewrite
 * keeps whatever a newer exporter put in it.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  AttributeProto_AttributeType,
  AttributeProtoSchema,
  ModelProtoSchema,
  NodeProtoSchema,
  TensorProto_DataType,
  TensorProtoSchema,
  TensorShapeProto_DimensionSchema,
  TensorShapeProtoSchema,
  TypeProto_TensorSchema,
  TypeProtoSchema,
  ValueInfoProtoSchema,
  type AttributeProto,
  type GraphProto,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from 'onnx-buf';

export type { AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto };
export { TensorProto_DataType as DataType };

export const decodeModel = (bytes: Uint8Array): ModelProto => fromBinary(ModelProtoSchema, bytes);
export const encodeModel = (model: ModelProto): Uint8Array => toBinary(ModelProtoSchema, model);
export const newModel = (init: Parameters<typeof create<typeof ModelProtoSchema>>[1]): ModelProto => create(ModelProtoSchema, init);

/** The element types our graphs use, by ONNX Runtime's names (what session metadata reports). */
export type ElementType = 'float32' | 'float16' | 'float64' | 'uint8' | 'int32' | 'int64' | 'bool';

const DATA_TYPE: Readonly<Record<ElementType, TensorProto_DataType>> = {
  float32: TensorProto_DataType.FLOAT,
  float16: TensorProto_DataType.FLOAT16,
  float64: TensorProto_DataType.DOUBLE,
  uint8: TensorProto_DataType.UINT8,
  int32: TensorProto_DataType.INT32,
  int64: TensorProto_DataType.INT64,
  bool: TensorProto_DataType.BOOL,
};
const BY_DATA_TYPE = new Map<number, ElementType>(Object.entries(DATA_TYPE).map(([k, v]) => [v, k as ElementType]));

export const dataTypeOf = (t: ElementType): TensorProto_DataType => DATA_TYPE[t];
/** The element type of an ONNX data type number, or undefined for the ones we never feed. */
export const elementTypeOf = (dataType: number): ElementType | undefined => BY_DATA_TYPE.get(dataType);

/** Bytes per element of the types that can be stored as raw_data. */
export function bytesPerElement(dataType: number): number {
  switch (dataType) {
    case TensorProto_DataType.DOUBLE:
    case TensorProto_DataType.INT64:
    case TensorProto_DataType.UINT64:
    case TensorProto_DataType.COMPLEX64:
      return 8;
    case TensorProto_DataType.COMPLEX128:
      return 16;
    case TensorProto_DataType.FLOAT:
    case TensorProto_DataType.INT32:
    case TensorProto_DataType.UINT32:
      return 4;
    case TensorProto_DataType.FLOAT16:
    case TensorProto_DataType.BFLOAT16:
    case TensorProto_DataType.INT16:
    case TensorProto_DataType.UINT16:
      return 2;
    default:
      return 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors

/** A dimension: a fixed size or a symbolic name. */
export type Dim = number | string;

/** A tensor value's declaration; `dims` undefined declares no shape (any rank). */
export function valueInfo(name: string, type: ElementType, dims: readonly Dim[] | undefined, docString?: string): ValueInfoProto {
  const dim = dims?.map((d) => create(TensorShapeProto_DimensionSchema, { value: typeof d === 'number' ? { case: 'dimValue', value: BigInt(d) } : { case: 'dimParam', value: d } }));
  const tensorType = create(TypeProto_TensorSchema, { elemType: dataTypeOf(type), ...(dim ? { shape: create(TensorShapeProtoSchema, { dim }) } : {}) });
  return create(ValueInfoProtoSchema, {
    name,
    type: create(TypeProtoSchema, { value: { case: 'tensorType', value: tensorType } }),
    ...(docString ? { docString } : {}),
  });
}

/** Element type and dims of a tensor-typed value (dims: number, symbolic name, or undefined when unknown). */
export function tensorTypeOf(v: ValueInfoProto): { type: number; dims: (number | string | undefined)[] } | undefined {
  const t = v.type?.value;
  if (t?.case !== 'tensorType') return undefined;
  const dims = (t.value.shape?.dim ?? []).map((d) => (d.value.case === 'dimValue' ? Number(d.value.value) : d.value.case === 'dimParam' ? d.value.value : undefined));
  return { type: t.value.elemType ?? 0, dims };
}

/** Attribute values: integers, strings, integer lists and graphs are plain; floats are wrapped. */
export type Attr = number | string | readonly number[] | { readonly float: number } | { readonly floats: readonly number[] } | { readonly tensor: TensorProto } | { readonly graph: GraphProto };

export const float = (value: number): Attr => ({ float: value });
export const floats = (value: readonly number[]): Attr => ({ floats: value });

export function attribute(name: string, a: Attr): AttributeProto {
  const T = AttributeProto_AttributeType;
  if (typeof a === 'string') return create(AttributeProtoSchema, { name, type: T.STRING, s: new TextEncoder().encode(a) });
  if (typeof a === 'number') {
    if (!Number.isInteger(a)) throw new Error(`attribute ${name}: ${a} is not an integer; wrap floats with float()`);
    return create(AttributeProtoSchema, { name, type: T.INT, i: BigInt(a) });
  }
  if (Array.isArray(a)) {
    const ints = a as readonly number[];
    if (!ints.every(Number.isInteger)) throw new Error(`attribute ${name}: use floats() for float lists`);
    return create(AttributeProtoSchema, { name, type: T.INTS, ints: ints.map((v) => BigInt(v)) });
  }
  const o = a as Exclude<Attr, number | string | readonly number[]>;
  if ('float' in o) return create(AttributeProtoSchema, { name, type: T.FLOAT, f: o.float });
  if ('floats' in o) return create(AttributeProtoSchema, { name, type: T.FLOATS, floats: [...o.floats] });
  if ('tensor' in o) return create(AttributeProtoSchema, { name, type: T.TENSOR, t: o.tensor });
  return create(AttributeProtoSchema, { name, type: T.GRAPH, g: o.graph });
}

export function node(opType: string, inputs: readonly string[], outputs: readonly string[], attrs: Readonly<Record<string, Attr>> = {}, name?: string, domain?: string): NodeProto {
  return create(NodeProtoSchema, {
    opType,
    input: [...inputs],
    output: [...outputs],
    ...(name ? { name } : {}),
    ...(domain ? { domain } : {}),
    attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
  });
}

/** An initializer with little-endian raw_data, independent of the host's byte order. */
export function tensor(name: string, type: 'float32' | 'float64' | 'int32' | 'int64' | 'uint8', dims: readonly number[], values: ArrayLike<number> | ArrayLike<bigint>): TensorProto {
  const n = dims.reduce((a, b) => a * b, 1);
  if (values.length !== n) throw new Error(`tensor ${name}: ${values.length} values for dims [${dims}]`);
  const width = type === 'int64' || type === 'float64' ? 8 : type === 'uint8' ? 1 : 4;
  const raw = new Uint8Array(n * width);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < n; i++) {
    const v = values[i] as number | bigint;
    if (type === 'float32') view.setFloat32(i * 4, Number(v), true);
    else if (type === 'int32') view.setInt32(i * 4, Number(v), true);
    else if (type === 'int64') view.setBigInt64(i * 8, BigInt(v), true);
    else if (type === 'float64') view.setFloat64(i * 8, Number(v), true);
    else view.setUint8(i, Number(v));
  }
  return create(TensorProtoSchema, { name, dataType: dataTypeOf(type), dims: dims.map((d) => BigInt(d)), rawData: raw });
}
