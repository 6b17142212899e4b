/**
 * Tools for writing export-matrix fixtures: the demo graphs rewritten into the names, dims and
 * dtypes another exporter gives the same graph (renamed values, symbolic axes renamed, outputs
 * dropped, fp16 IO around an unchanged body), small stand-in graphs for exports the worker
 * refuses, and the manifest that uses them with the demo graphs for every other role.
 */
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeModel, encodeModel, node, tensorTypeOf, valueInfo, type Dim, type ElementType, type ModelProto } from '../../../src/onnx/proto.ts';
import { elementTypeOf } from '../../../src/onnx/proto.ts';
import { encodeModel as encodeDef, type ValueInfoDef } from '../onnx-writer.ts';
import { writeManifestVariant, type ManifestJson } from '../manifest-variants.ts';

export { withHalfIo } from '../../../test/helpers/onnx-variants.ts';
export type { ManifestJson };

export const DEMO_DIR = fileURLToPath(new URL('../../../models/demo/', import.meta.url));

/** A demo graph (path under models/demo), decoded for rewriting. */
export async function demoGraph(path: string): Promise<ModelProto> {
  return decodeModel(await readFile(join(DEMO_DIR, path)));
}

/** Renames a graph input or output and every use of it. */
export function renameValue(model: ModelProto, from: string, to: string): ModelProto {
  const g = model.graph!;
  for (const n of g.node) {
    n.input = n.input.map((x) => (x === from ? to : x));
    n.output = n.output.map((x) => (x === from ? to : x));
  }
  for (const v of [...g.input, ...g.output]) if (v.name === from) v.name = to;
  return model;
}

/** Declares new dims (same dtype) for an input or output. */
export function setDims(model: ModelProto, name: string, dims: readonly Dim[]): ModelProto {
  const g = model.graph!;
  const swap = (list: typeof g.input) =>
    list.map((v) => {
      if (v.name !== name) return v;
      const t = tensorTypeOf(v)!;
      return valueInfo(name, elementTypeOf(t.type) as ElementType, dims);
    });
  g.input = swap(g.input);
  g.output = swap(g.output);
  return model;
}

/** Keeps only the outputs `keep` says yes to. */
export function keepOutputs(model: ModelProto, keep: (name: string) => boolean): ModelProto {
  model.graph!.output = model.graph!.output.filter((v) => keep(v.name));
  return model;
}

/** Adds graph inputs that no node reads (what an exporter declares and this stand-in ignores). */
export function addInputs(model: ModelProto, inputs: readonly { name: string; type: ElementType; dims: readonly Dim[] }[]): ModelProto {
  for (const i of inputs) model.graph!.input.push(valueInfo(i.name, i.type, i.dims));
  return model;
}

/**
 * A stand-in graph with exactly these inputs and outputs: every output is the first input passed
 * through (Identity), so it loads and runs; only its contract matters (for refused exports).
 */
export function standIn(name: string, inputs: readonly ValueInfoDef[], outputs: readonly ValueInfoDef[]): Uint8Array {
  const source = inputs[0]!.name;
  return encodeDef({
    graph: {
      name,
      nodes: outputs.map((o) => ({ opType: 'Identity', inputs: [source], outputs: [o.name] })),
      initializers: [],
      inputs,
      outputs,
    },
  });
}

/** Writes a graph (model or bytes) to `dir/path`, making folders; returns its absolute path. */
export async function writeGraph(dir: string, path: string, model: ModelProto | Uint8Array): Promise<string> {
  const file = resolve(dir, path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, model instanceof Uint8Array ? model : encodeModel(model));
  return file;
}

/** Writes `dir/manifest.json`: the demo manifest (absolute paths) changed by `edit` for the model demo-sd15. */
export function writeFixtureManifest(dir: string, edit: (graphs: ManifestJson, model: ManifestJson, manifest: ManifestJson) => void): Promise<string> {
  return writeManifestVariant(dir, 'manifest', (m) => edit(m.models['demo-sd15'].graphs, m.models['demo-sd15'], m));
}

/** The separate demo pair in place of the fused denoiser, with `unet` / `controlnet` overridden where given. */
export function separatePair(graphs: ManifestJson, over: { unet?: object; controlnet?: object } = {}): void {
  delete graphs.denoiser;
  graphs.unet = over.unet ?? { path: join(DEMO_DIR, 'unet/model.onnx') };
  graphs.controlnet = over.controlnet ?? { path: join(DEMO_DIR, 'controlnet/model.onnx') };
}

/** Declares an input as another element type, cast back to its old type where the body reads it. */
export function retypeInput(model: ModelProto, name: string, type: ElementType, dims: readonly Dim[]): ModelProto {
  const g = model.graph!;
  const old = tensorTypeOf(g.input.find((v) => v.name === name)!)!;
  const inner = `${name}/as-${elementTypeOf(old.type)}`;
  for (const n of g.node) n.input = n.input.map((x) => (x === name ? inner : x));
  g.node.unshift(node('Cast', [name], [inner], { to: old.type }, `${name}/retype`));
  g.input = g.input.map((v) => (v.name === name ? valueInfo(name, type, dims) : v));
  return model;
}
