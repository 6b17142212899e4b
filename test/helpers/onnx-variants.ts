/**
 * Rewrites of the demo graphs into the shapes other exporters give the same models, for the
 * fuse tests: fp16 inputs and outputs around an unchanged body (diffusers/optimum fp16 exports as
 * seen from outside), a ControlNet without a conditioning_scale input (some OnnxStack/Amuse
 * exports), a UNet with an input the fused graph cannot feed (a full LCM's timestep_cond).
 */
import { decodeModel, node, tensor, tensorTypeOf, valueInfo, type Dim, type ModelProto } from '../../src/onnx/proto.ts';
import { DataType } from '../../src/onnx/proto.ts';

export const copyModel = (bytes: Uint8Array): ModelProto => decodeModel(bytes);

const dimsOf = (m: ModelProto, name: string, side: 'input' | 'output'): Dim[] => {
  const v = (side === 'input' ? m.graph!.input : m.graph!.output).find((x) => x.name === name)!;
  return tensorTypeOf(v)!.dims.map((d, i) => d ?? `d${i}`);
};

/** Float32 inputs and outputs become float16, cast to and from float32 at the graph's edge. */
export function withHalfIo(model: ModelProto): ModelProto {
  const g = model.graph!;
  const floats = (vs: typeof g.input) => vs.filter((v) => tensorTypeOf(v)?.type === DataType.FLOAT).map((v) => v.name);
  const inputs = floats(g.input);
  const outputs = floats(g.output);
  const rename = (n: string) => (inputs.includes(n) ? `${n}/f32` : outputs.includes(n) ? `${n}/f32out` : n);
  for (const n of g.node) {
    n.input = n.input.map(rename);
    n.output = n.output.map(rename);
  }
  const head = inputs.map((n) => node('Cast', [n], [`${n}/f32`], { to: DataType.FLOAT }, `${n}/iocast`));
  const tail = outputs.map((n) => node('Cast', [`${n}/f32out`], [n], { to: DataType.FLOAT16 }, `${n}/iocast`));
  g.node = [...head, ...g.node, ...tail];
  g.input = g.input.map((v) => (inputs.includes(v.name) ? valueInfo(v.name, 'float16', dimsOf(model, v.name, 'input')) : v));
  g.output = g.output.map((v) => (outputs.includes(v.name) ? valueInfo(v.name, 'float16', dimsOf(model, v.name, 'output')) : v));
  return model;
}

/** The conditioning_scale input replaced by a constant 1: the residuals come out unscaled. */
export function withoutScaleInput(controlnet: ModelProto): ModelProto {
  const g = controlnet.graph!;
  g.input = g.input.filter((v) => v.name !== 'conditioning_scale');
  g.initializer.push(tensor('conditioning_scale', 'float64', [], [1]));
  return controlnet;
}

/** An extra graph input nobody feeds (a full LCM UNet's timestep_cond). */
export function withExtraInput(unet: ModelProto, name: string): ModelProto {
  const g = unet.graph!;
  g.input.push(valueInfo(name, 'float32', ['batch', 256]));
  return unet;
}

/** The default opset set to `version`. */
export function withOpset(model: ModelProto, version: number): ModelProto {
  for (const o of model.opsetImport) if (o.domain === '') o.version = BigInt(version);
  return model;
}
