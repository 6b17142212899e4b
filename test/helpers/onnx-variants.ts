/**
 * Rewrites of the demo graphs into the shapes other exporters give the same models, for the
 * fuse tests. The exporter-shaped ones live with the export-matrix fixtures
 * (scripts/demo-models/exports/graph-variants.ts) and are re-exported here; these two are only
 * for refusals: a UNet with an input the fused graph cannot feed (a full LCM's timestep_cond),
 * and a graph of another opset.
 */
import { valueInfo, type ModelProto } from '../../src/onnx/proto.ts';

export { copyModel, withHalfBody, withHalfIo, withLatentParameters, withoutScaleInput, withSamplingEncoder } from '../../scripts/demo-models/exports/graph-variants.ts';

/** An extra [batch, 256] float input (an input fuse cannot feed, or a full LCM UNet's timestep_cond). */
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
