/**
 * Variants of the shipped demo manifest for tests and benchmarks: a copy whose paths are absolute
 * (so it can live anywhere), edited, written to a folder of the caller's.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEMO_MANIFEST = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));
const MODELS_DIR = resolve(DEMO_MANIFEST, '..');

/** The manifest as JSON to edit (its schema is checked when it is loaded). */
export type ManifestJson = any;

/** The shipped manifest with every graph and tokenizer path made absolute. */
export async function demoManifestJson(): Promise<ManifestJson> {
  const manifest = JSON.parse(await readFile(DEMO_MANIFEST, 'utf8'));
  for (const model of Object.values<ManifestJson>(manifest.models)) {
    model.tokenizer = resolve(MODELS_DIR, model.tokenizer);
    for (const graph of Object.values<ManifestJson>(model.graphs)) graph.path = resolve(MODELS_DIR, graph.path);
  }
  return manifest;
}

/** The demo model with its ControlNet and UNet as the separate pair instead of the fused denoiser. */
export function useSeparatePair(manifest: ManifestJson): void {
  const graphs = manifest.models['demo-sd15'].graphs;
  delete graphs.denoiser;
  graphs.unet = { path: resolve(MODELS_DIR, 'demo/unet/model.onnx') };
  graphs.controlnet = { path: resolve(MODELS_DIR, 'demo/controlnet/model.onnx') };
}

/** Writes `<dir>/<name>.json`: the shipped manifest (absolute paths) changed by `edit`. */
export async function writeManifestVariant(dir: string, name: string, edit: (manifest: ManifestJson) => void = () => undefined): Promise<string> {
  const manifest = await demoManifestJson();
  edit(manifest);
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(manifest, null, 2));
  return file;
}
