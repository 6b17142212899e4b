/**
 * A "heavy" demo UNet for benchmarks: the demo UNet (unet.ts, same inputs, outputs and
 * out_sample values) plus a stack of 3×3 convolutions at latent resolution (4 → C → … → C → 4,
 * ReLU between, random but fixed weights) whose result is multiplied by zero and added to
 * out_sample. The images are the demo UNet's; only the compute per call grows, so a step costs
 * something closer to a real SD1.5 UNet on CPU and the pipeline's non-model overhead can be
 * judged against it.
 *
 *   npx tsx scripts/demo-models/heavy-unet.ts <output folder> [convs] [channels]
 * writes <folder>/denoiser/model.onnx (the demo ControlNet fused with the heavy UNet) and
 * <folder>/manifest.json: a copy of models/manifest.json whose graphs point at models/demo
 * (absolute paths) except the denoiser (with `separate`: <folder>/unet/model.onnx and the demo
 * ControlNet as the pair), and, with `inpaint`, unet_inpaint at <folder>/unet_inpaint/model.onnx
 * (the same stack on the demo inpainting UNet: scripts/bench/outpaint.ts --heavy).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fuseControlNet } from '../../src/onnx/fuse.ts';
import { decodeModel, encodeModel } from '../../src/onnx/proto.ts';
import { GraphBuilder, type Value } from './graph.ts';
import { useSeparatePair, writeManifestVariant } from './manifest-variants.ts';
import { buildControlNet, buildUnet, buildUnetInpaint } from './unet.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

export interface HeavyOptions {
  /** 3×3 convolutions C → C (besides the 4 → C and C → 4 ends). */
  readonly convs: number;
  readonly channels: number;
  /** Also write a heavy inpainting UNet (same stack on its 9-channel input) for unet_inpaint. */
  readonly inpaint?: boolean;
}

/** Deterministic uniform weights in [-a, a] (mulberry32). */
function weights(n: number, a: number, seed: number): Float32Array {
  const random = mulberry32(seed);
  return Float32Array.from({ length: n }, () => (random() * 2 - 1) * a);
}

function convStack(g: GraphBuilder, x: Value, { convs, channels }: HeavyOptions, inChannels = 4): Value {
  const conv = (input: Value, cin: number, cout: number, seed: number): Value => {
    // He-uniform scale keeps activations bounded through the stack.
    const a = Math.sqrt(6 / (cin * 9));
    const w = g.constF32(undefined, [cout, cin, 3, 3], weights(cout * cin * 9, a, seed));
    const b = g.constF32(undefined, [cout], new Float32Array(cout));
    return g.op('Conv', [input, w, b], { kernel_shape: [3, 3], pads: [1, 1, 1, 1] });
  };
  let y = g.op('Relu', [conv(x, inChannels, channels, 1)]);
  for (let i = 0; i < convs; i++) y = g.op('Relu', [conv(y, channels, channels, 100 + i)]);
  return conv(y, channels, 4, 2);
}

/** A demo UNet builder with the conv stack added to its output path (times zero). */
function withConvStack(graphName: 'unet' | 'unet_inpaint', build: () => Uint8Array, options: HeavyOptions, inChannels: number): Uint8Array {
  const proto = GraphBuilder.prototype;
  const original = proto.output;
  proto.output = function (this: GraphBuilder, value, name, dtype, dims, docString) {
    if (this.name === graphName && name === 'out_sample') {
      const extra = convStack(this, 'sample', options, inChannels);
      value = this.add(value, this.mul(extra, this.f(0)));
    }
    return original.call(this, value, name, dtype, dims, docString);
  };
  try {
    return build();
  } finally {
    proto.output = original;
  }
}

/** The demo UNet with the conv stack added to its output path (times zero). */
export function buildHeavyUnet(options: HeavyOptions): Uint8Array {
  return withConvStack('unet', buildUnet, options, 4);
}

/** The demo inpainting UNet with the same stack on its 9-channel input (times zero). */
export function buildHeavyUnetInpaint(options: HeavyOptions): Uint8Array {
  return withConvStack('unet_inpaint', buildUnetInpaint, options, 9);
}

/** The demo ControlNet fused with the heavy UNet (what `qr-art models fuse` makes of that pair). */
export function buildHeavyDenoiser(options: HeavyOptions): Uint8Array {
  const fused = fuseControlNet({ model: decodeModel(buildControlNet()), file: 'controlnet/model.onnx' }, { model: decodeModel(buildHeavyUnet(options)), file: 'heavy unet' });
  return encodeModel(fused);
}

/**
 * Writes the heavy graphs and a manifest using them into `outDir`; returns the manifest's path.
 * The model runs the heavy fused denoiser, or with `separate` the demo ControlNet + heavy UNet pair.
 */
export async function writeHeavyModels(outDir: string, options: HeavyOptions & { readonly separate?: boolean }): Promise<string> {
  const write = async (role: string, bytes: Uint8Array): Promise<string> => {
    await mkdir(join(outDir, role), { recursive: true });
    const file = join(outDir, role, 'model.onnx');
    await writeFile(file, bytes);
    return file;
  };
  const heavy = options.separate ? await write('unet', buildHeavyUnet(options)) : await write('denoiser', buildHeavyDenoiser(options));
  const inpaint = options.inpaint ? await write('unet_inpaint', buildHeavyUnetInpaint(options)) : undefined;
  return writeManifestVariant(outDir, 'manifest', (manifest) => {
    if (options.separate) useSeparatePair(manifest);
    const graphs = manifest.models['demo-sd15'].graphs;
    graphs[options.separate ? 'unet' : 'denoiser'].path = heavy;
    if (inpaint) graphs.unet_inpaint.path = inpaint;
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [target, convs = '1', channels = '320'] = process.argv.slice(2);
  if (!target) {
    console.error('usage: npx tsx scripts/demo-models/heavy-unet.ts <output folder> [convs] [channels]');
    process.exit(2);
  }
  console.log(await writeHeavyModels(resolve(target), { convs: Number(convs), channels: Number(channels) }));
}
