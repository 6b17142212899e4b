/**
 * The demo graphs' model description (graph.ts builds it) and its encoding as an ONNX ModelProto
 * with the project's protobuf library (src/onnx/proto.ts), so the demo graphs and `models fuse`
 * write ONNX the same way.
 */
import { create } from '@bufbuild/protobuf';
import { GraphProtoSchema, OperatorSetIdProtoSchema } from 'onnx-buf';
import { encodeModel as protoEncode, float, floats, newModel, node, tensor, valueInfo, type Attr, type Dim, type ElementType } from '../../src/onnx/proto.ts';

export type { Dim } from '../../src/onnx/proto.ts';
export type DType = ElementType;

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

/** Serialises a ModelProto (protobuf-es, through src/onnx/proto.ts). */
export function encodeModel(m: ModelDef): Uint8Array {
  const g = m.graph;
  const attrValue = (a: AttributeDef): Attr => {
    switch (a.kind) {
      case 'float':
        return float(a.value);
      case 'floats':
        return floats(a.value);
      case 'tensor':
        return { tensor: tensor(a.value.name, a.value.dtype, a.value.dims, a.value.data) };
      default:
        return a.value;
    }
  };
  const graph = create(GraphProtoSchema, {
    name: g.name,
    node: g.nodes.map((n) => node(n.opType, n.inputs, n.outputs, Object.fromEntries((n.attributes ?? []).map((a) => [a.name, attrValue(a)])), n.name, n.domain)),
    initializer: g.initializers.map((t) => tensor(t.name, t.dtype, t.dims, t.data)),
    input: g.inputs.map((v) => valueInfo(v.name, v.dtype, v.dims, v.docString)),
    output: g.outputs.map((v) => valueInfo(v.name, v.dtype, v.dims, v.docString)),
    ...(g.docString ? { docString: g.docString } : {}),
  });
  return protoEncode(
    newModel({
      irVersion: BigInt(m.irVersion ?? 8),
      producerName: m.producerName ?? 'qr-art-demo-models',
      producerVersion: m.producerVersion ?? '1',
      ...(m.docString ? { docString: m.docString } : {}),
      graph,
      opsetImport: [create(OperatorSetIdProtoSchema, { domain: '', version: BigInt(m.opset ?? 17) })],
    }),
  );
}
