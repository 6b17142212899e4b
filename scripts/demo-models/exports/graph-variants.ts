/**
 * Rewrites of the demo graphs into the shapes other exporters give the same models, for the
 * export-matrix fixtures and the fuse tests (test/helpers/onnx-variants.ts re-exports them):
 *
 *   withHalfIo            fp16 inputs and outputs around an unchanged body (diffusers/optimum
 *                         --fp16 exports as seen from outside)
 *   withHalfBody          float32 inputs and outputs around a body that runs through fp16
 *                         (OnnxStack's float32-IO conversion of fp16 graphs, seen from outside)
 *   withoutScaleInput     a ControlNet whose conditioning_scale was traced in as a constant 1
 *                         (OnnxStack/Amuse: the scale is a Python float in the traced arguments)
 *   withSamplingEncoder   a VAE encoder with latent_dist.sample() traced in: mean + std · ε with
 *                         ε from RandomNormalLike (diffusers' conversion script, OnnxStack,
 *                         optimum before 1.23)
 *   withLatentParameters  a VAE encoder giving mean ‖ logvar as `latent_parameters` (optimum 1.23+)
 */
import { DataType, decodeModel, node, tensor, tensorTypeOf, valueInfo, type Dim, type ModelProto } from '../../../src/onnx/proto.ts';

export const copyModel = (bytes: Uint8Array): ModelProto => decodeModel(bytes);

const dimsOf = (m: ModelProto, name: string, side: 'input' | 'output'): Dim[] => {
  const v = (side === 'input' ? m.graph!.input : m.graph!.output).find((x) => x.name === name)!;
  return tensorTypeOf(v)!.dims.map((d, i) => d ?? `d${i}`);
};

/** Names of the float32 inputs and outputs. */
function floatIo(model: ModelProto): { inputs: string[]; outputs: string[] } {
  const g = model.graph!;
  const floats = (vs: typeof g.input) => vs.filter((v) => tensorTypeOf(v)?.type === DataType.FLOAT).map((v) => v.name);
  return { inputs: floats(g.input), outputs: floats(g.output) };
}

/** Renames the body's uses of the float inputs and its definitions of the float outputs. */
function detachIo(model: ModelProto, inputs: string[], outputs: string[]): void {
  const rename = (n: string) => (inputs.includes(n) ? `${n}/body` : outputs.includes(n) ? `${n}/bodyout` : n);
  for (const n of model.graph!.node) {
    n.input = n.input.map(rename);
    n.output = n.output.map(rename);
  }
}

/** Float32 inputs and outputs become float16, cast to and from float32 at the graph's edge. */
export function withHalfIo(model: ModelProto): ModelProto {
  const g = model.graph!;
  const { inputs, outputs } = floatIo(model);
  detachIo(model, inputs, outputs);
  const head = inputs.map((n) => node('Cast', [n], [`${n}/body`], { to: DataType.FLOAT }, `${n}/iocast`));
  const tail = outputs.map((n) => node('Cast', [`${n}/bodyout`], [n], { to: DataType.FLOAT16 }, `${n}/iocast`));
  g.node = [...head, ...g.node, ...tail];
  g.input = g.input.map((v) => (inputs.includes(v.name) ? valueInfo(v.name, 'float16', dimsOf(model, v.name, 'input')) : v));
  g.output = g.output.map((v) => (outputs.includes(v.name) ? valueInfo(v.name, 'float16', dimsOf(model, v.name, 'output')) : v));
  return model;
}

/** Float32 inputs and outputs stay; every one is rounded through float16 on its way in and out. */
export function withHalfBody(model: ModelProto): ModelProto {
  const g = model.graph!;
  const { inputs, outputs } = floatIo(model);
  detachIo(model, inputs, outputs);
  const round = (from: string, to: string, at: string) => [
    node('Cast', [from], [`${at}/fp16`], { to: DataType.FLOAT16 }, `${at}/to-fp16`),
    node('Cast', [`${at}/fp16`], [to], { to: DataType.FLOAT }, `${at}/to-fp32`),
  ];
  const head = inputs.flatMap((n) => round(n, `${n}/body`, `${n}/in`));
  const tail = outputs.flatMap((n) => round(`${n}/bodyout`, n, `${n}/out`));
  g.node = [...head, ...g.node, ...tail];
  return model;
}

/** The conditioning_scale input replaced by a constant 1: the residuals come out unscaled. */
export function withoutScaleInput(controlnet: ModelProto): ModelProto {
  const g = controlnet.graph!;
  g.input = g.input.filter((v) => v.name !== 'conditioning_scale');
  g.initializer.push(tensor('conditioning_scale', 'float64', [], [1]));
  return controlnet;
}

/** Log-variance the encoder fixtures report (std = exp(logvar / 2) ≈ 0.14: a visible draw). */
const LOGVAR = -4;

/** The encoder's `latent_sample` becomes the mean of a draw: latent_sample = mean + std · RandomNormalLike(mean). */
export function withSamplingEncoder(encoder: ModelProto): ModelProto {
  const g = encoder.graph!;
  const dims = dimsOf(encoder, 'latent_sample', 'output');
  detachIo(encoder, [], ['latent_sample']);
  g.initializer.push(tensor('posterior/std', 'float32', [], [Math.exp(LOGVAR / 2)]));
  g.node.push(
    node('RandomNormalLike', ['latent_sample/bodyout'], ['posterior/eps'], { dtype: DataType.FLOAT }, 'posterior/randn'),
    node('Mul', ['posterior/eps', 'posterior/std'], ['posterior/noise'], {}, 'posterior/scale'),
    node('Add', ['latent_sample/bodyout', 'posterior/noise'], ['latent_sample'], {}, 'posterior/sample'),
  );
  g.output = [valueInfo('latent_sample', 'float32', dims)];
  return encoder;
}

/** The encoder gives `latent_parameters`: [mean ‖ logvar] on the channel axis (8 channels). */
export function withLatentParameters(encoder: ModelProto): ModelProto {
  const g = encoder.graph!;
  const [b, , h, w] = dimsOf(encoder, 'latent_sample', 'output');
  detachIo(encoder, [], ['latent_sample']);
  const mean = 'latent_sample/bodyout';
  g.initializer.push(tensor('posterior/logvar', 'float32', [], [LOGVAR]));
  g.node.push(
    node('Sub', [mean, mean], ['posterior/zeros'], {}, 'posterior/zeros'),
    node('Add', ['posterior/zeros', 'posterior/logvar'], ['posterior/logvar_map'], {}, 'posterior/logvar'),
    node('Concat', [mean, 'posterior/logvar_map'], ['latent_parameters'], { axis: 1 }, 'posterior/parameters'),
  );
  g.output = [valueInfo('latent_parameters', 'float32', [b!, 8, h!, w!])];
  return encoder;
}
