/**
 * Minimal ONNX ModelProto encoder: a protobuf wire-format writer plus the handful of onnx.proto
 * messages the demo graphs need. Written from the public onnx.proto field numbers so the build
 * needs no protobuf package and nothing from the network.
 */

export type DType = 'float32' | 'uint8' | 'int32' | 'int64' | 'bool' | 'float16' | 'float64';

/** TensorProto.DataType values. */
export const ONNX_DTYPE: Record<DType, number> = {
  float32: 1,
  uint8: 2,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  float64: 11,
};

/** A dimension: a fixed size or a symbolic name ("batch", "height"). */
export type Dim = number | string;

export interface TensorDef {
  name: string;
  dtype: 'float32' | 'int32' | 'int64' | 'float64';
  dims: number[];
  data: ArrayLike<number> | ArrayLike<bigint>;
}

export type AttributeDef =
  | { name: string; kind: 'int'; value: number }
  | { name: string; kind: 'float'; value: number }
  | { name: string; kind: 'string'; value: string }
  | { name: string; kind: 'ints'; value: readonly number[] }
  | { name: string; kind: 'floats'; value: readonly number[] }
  | { name: string; kind: 'tensor'; value: TensorDef };

export interface NodeDef {
  opType: string;
  inputs: readonly string[];
  outputs: readonly string[];
  name?: string;
  domain?: string;
  attributes?: readonly AttributeDef[];
}

export interface ValueInfoDef {
  name: string;
  dtype: DType;
  dims: readonly Dim[];
  docString?: string;
}

export interface GraphDef {
  name: string;
  nodes: readonly NodeDef[];
  initializers: readonly TensorDef[];
  inputs: readonly ValueInfoDef[];
  outputs: readonly ValueInfoDef[];
  docString?: string;
}

export interface ModelDef {
  graph: GraphDef;
  /** IR 8 pairs with opset 17 (onnx 1.12+); onnxruntime 1.30 reads both. */
  irVersion?: number;
  opset?: number;
  producerName?: string;
  producerVersion?: string;
  docString?: string;
}

const WIRE_VARINT = 0;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;
const utf8 = new TextEncoder();

/** Append-only protobuf writer; nested messages are encoded separately and embedded as bytes. */
export class ProtoWriter {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }

  /** Varint of a 64-bit value; negatives use two's complement (10 bytes), as protobuf int64 does. */
  varint(value: number | bigint): void {
    let v = BigInt.asUintN(64, BigInt(value));
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, value: number | bigint): void {
    this.tag(field, WIRE_VARINT);
    this.varint(value);
  }

  float(field: number, value: number): void {
    this.tag(field, WIRE_FIXED32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.push(b);
  }

  bytes(field: number, value: Uint8Array): void {
    this.tag(field, WIRE_LEN);
    this.varint(value.length);
    this.push(value);
  }

  string(field: number, value: string): void {
    this.bytes(field, utf8.encode(value));
  }

  message(field: number, body: ProtoWriter): void {
    this.bytes(field, body.finish());
  }

  /** Packed repeated varints (parsers accept packed and unpacked for repeated scalars). */
  packedInts(field: number, values: readonly (number | bigint)[]): void {
    const body = new ProtoWriter();
    for (const v of values) body.varint(v);
    this.bytes(field, body.finish());
  }

  packedFloats(field: number, values: readonly number[]): void {
    const b = new Uint8Array(values.length * 4);
    const view = new DataView(b.buffer);
    values.forEach((v, i) => view.setFloat32(i * 4, v, true));
    this.bytes(field, b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const c of this.chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  }
}

/** Little-endian raw_data for a tensor, independent of the host's byte order. */
export function rawData(t: TensorDef): Uint8Array {
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (t.data.length !== n) throw new Error(`tensor ${t.name}: ${t.data.length} values for dims [${t.dims}]`);
  const width = t.dtype === 'int64' || t.dtype === 'float64' ? 8 : 4;
  const out = new Uint8Array(n * width);
  const view = new DataView(out.buffer);
  for (let i = 0; i < n; i++) {
    const v = t.data[i] as number | bigint;
    switch (t.dtype) {
      case 'float32':
        view.setFloat32(i * 4, Number(v), true);
        break;
      case 'int32':
        view.setInt32(i * 4, Number(v), true);
        break;
      case 'int64':
        view.setBigInt64(i * 8, BigInt(v), true);
        break;
      case 'float64':
        view.setFloat64(i * 8, Number(v), true);
        break;
    }
  }
  return out;
}

// Field numbers below are onnx.proto's.

function tensorProto(t: TensorDef): ProtoWriter {
  const w = new ProtoWriter();
  if (t.dims.length > 0) w.packedInts(1, t.dims); // dims
  w.int(2, ONNX_DTYPE[t.dtype]); // data_type
  w.string(8, t.name); // name
  w.bytes(9, rawData(t)); // raw_data
  return w;
}

const ATTR_TYPE = { float: 1, int: 2, string: 3, tensor: 4, floats: 6, ints: 7 } as const;

function attributeProto(a: AttributeDef): ProtoWriter {
  const w = new ProtoWriter();
  w.string(1, a.name);
  switch (a.kind) {
    case 'float':
      w.float(2, a.value);
      break;
    case 'int':
      w.int(3, a.value);
      break;
    case 'string':
      w.string(4, a.value);
      break;
    case 'tensor':
      w.message(5, tensorProto(a.value));
      break;
    case 'floats':
      w.packedFloats(7, a.value);
      break;
    case 'ints':
      w.packedInts(8, a.value);
      break;
  }
  w.int(20, ATTR_TYPE[a.kind]); // type
  return w;
}

function nodeProto(n: NodeDef): ProtoWriter {
  const w = new ProtoWriter();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  if (n.name) w.string(3, n.name);
  w.string(4, n.opType);
  for (const a of n.attributes ?? []) w.message(5, attributeProto(a));
  if (n.domain) w.string(7, n.domain);
  return w;
}

function valueInfoProto(v: ValueInfoDef): ProtoWriter {
  const shape = new ProtoWriter(); // TensorShapeProto
  for (const d of v.dims) {
    const dim = new ProtoWriter(); // TensorShapeProto.Dimension
    if (typeof d === 'number') dim.int(1, d); // dim_value
    else dim.string(2, d); // dim_param
    shape.message(1, dim);
  }
  const tensor = new ProtoWriter(); // TypeProto.Tensor
  tensor.int(1, ONNX_DTYPE[v.dtype]); // elem_type
  tensor.message(2, shape);
  const type = new ProtoWriter(); // TypeProto
  type.message(1, tensor); // tensor_type
  const w = new ProtoWriter();
  w.string(1, v.name);
  w.message(2, type);
  if (v.docString) w.string(3, v.docString);
  return w;
}

function graphProto(g: GraphDef): ProtoWriter {
  const w = new ProtoWriter();
  for (const n of g.nodes) w.message(1, nodeProto(n));
  w.string(2, g.name);
  for (const t of g.initializers) w.message(5, tensorProto(t));
  if (g.docString) w.string(10, g.docString);
  for (const i of g.inputs) w.message(11, valueInfoProto(i));
  for (const o of g.outputs) w.message(12, valueInfoProto(o));
  return w;
}

/** Serialises a ModelProto. */
export function encodeModel(m: ModelDef): Uint8Array {
  const w = new ProtoWriter();
  w.int(1, m.irVersion ?? 8); // ir_version
  w.string(2, m.producerName ?? 'qr-art-demo-models'); // producer_name
  w.string(3, m.producerVersion ?? '1'); // producer_version
  if (m.docString) w.string(6, m.docString); // doc_string
  w.message(7, graphProto(m.graph)); // graph
  const opset = new ProtoWriter(); // OperatorSetIdProto, default domain ""
  opset.string(1, '');
  opset.int(2, m.opset ?? 17);
  w.message(8, opset); // opset_import
  return w.finish();
}
