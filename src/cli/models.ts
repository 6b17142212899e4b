/**
 * `qr-art models fuse`: one graph of the `denoiser` role from a separate ControlNet and
 * ControlNet-ready UNet (src/onnx/fuse.ts), written inline or with external data, then opened
 * in ONNX Runtime and checked against the role so a bad fuse fails here, not at a worker's start.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import { FuseError, fuseControlNet, type NameMap } from '../onnx/fuse.ts';
import { ModelFileError, readModelFile, type ExternalDataMode } from '../onnx/model-file.ts';
import { GraphSession, GraphSessionError } from '../pipeline/graph-session.ts';
import { writeCheckedModel } from './checked-model-write.ts';
import { REWRITE_USAGE, rewriteCommand } from './models-rewrite.ts';
import { loadManifest, ManifestError, manifestPath } from '../pipeline/manifest.ts';

const USAGE = `qr-art models check --manifest FILE [--provider cpu|cuda|webgpu]   (qr-art models check --help)

qr-art models fuse (--controlnet FILE --unet FILE | --manifest FILE --model ID [--controlnet-id ID]) --out FILE [options]

Fuses a ControlNet graph and a ControlNet-ready UNet graph (13 residuals out of one, into the
other, as OnnxStack/Amuse export them) into one denoiser graph: one call per denoising step,
classifier-free guidance inside, the control image as uint8. Point the manifest's
models.<id>.graphs.denoiser at the result.

  --controlnet FILE          the ControlNet graph (model.onnx; external data is followed)
  --unet FILE                the UNet graph with the 13 residual inputs
  --manifest FILE --model ID take both (and their name maps) from a manifest's model; with
  --controlnet-id ID         a ControlNet of the manifest's controlnets instead of the model's own
  --controlnet-names MAP     role=name,... where the ControlNet's names differ (inputs and outputs)
  --unet-names MAP           role=name,... where the UNet's names differ
  --out FILE                 the fused model.onnx to write
  --external-data MODE       auto (over 2 GiB), always, never (default auto); weights go to FILE_data
  --guidance outside         diffusers' fused layout instead (2B rows in and out, CFG left to the
                             worker): for engines that want it; the default folds CFG in
  --no-check                 do not open the result in ONNX Runtime (it needs the model's memory)`;

/** role=name,role=name → a name map (roles on both sides, as the manifest's inputs/outputs). */
function parseNames(value: string | undefined, flag: string): NameMap | undefined {
  if (!value) return undefined;
  const pairs = value.split(',').map((p) => p.split('='));
  const bad = pairs.find((p) => p.length !== 2 || !p[0] || !p[1]);
  if (bad) throw new FuseError(`${flag}: '${bad.join('=')}' is not role=name`);
  const names = Object.fromEntries(pairs) as Record<string, string>;
  return { inputs: names, outputs: names };
}

export async function modelsCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action === 'check') return (await import('./models-check.ts')).modelsCheckCommand(rest);
  // One-graph rewrites that make a refused export servable (models-rewrite.ts).
  if (action === 'scale-controlnet' || action === 'vae-mean') return rewriteCommand(action, rest);
  if (action !== 'fuse') {
    const help = action === '--help' || action === '-h' || action === 'help';
    // Asked for: on stdout. A typo or nothing: the usage on stderr, saying what was wrong.
    if (help) console.log(`${USAGE}\n\n${REWRITE_USAGE}`);
    else console.error(`${action === undefined ? 'qr-art models needs an action' : `unknown action '${action}'`}\n\n${USAGE}\n\n${REWRITE_USAGE}`);
    return help ? 0 : 1;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      controlnet: { type: 'string' },
      unet: { type: 'string' },
      manifest: { type: 'string' },
      model: { type: 'string' },
      'controlnet-id': { type: 'string' },
      'controlnet-names': { type: 'string' },
      'unet-names': { type: 'string' },
      out: { type: 'string' },
      'external-data': { type: 'string', default: 'auto' },
      guidance: { type: 'string', default: 'fold' },
      'no-check': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const problems: string[] = [];
  const mode = values['external-data'] as ExternalDataMode;
  if (!['auto', 'always', 'never'].includes(mode)) problems.push(`--external-data must be auto, always or never, got '${mode}'`);
  if (!values.out) problems.push('--out is required');
  if (values.guidance !== 'fold' && values.guidance !== 'outside') problems.push(`--guidance must be fold or outside, got '${values.guidance}'`);
  const fromManifest = values.manifest !== undefined;
  if (fromManifest ? !values.model : !values.controlnet || !values.unet) problems.push('give --controlnet and --unet, or --manifest and --model');
  if (problems.length > 0) {
    for (const p of problems) console.error(p);
    console.error(`\n${USAGE}`);
    return 2;
  }
  try {
    const sources = fromManifest ? await fromManifestModel(values.manifest!, values.model!, values['controlnet-id']) : undefined;
    const cnFile = sources?.controlnet.file ?? resolve(values.controlnet!);
    const unetFile = sources?.unet.file ?? resolve(values.unet!);
    const cnNames = sources?.controlnet.names ?? parseNames(values['controlnet-names'], '--controlnet-names');
    const unetNames = sources?.unet.names ?? parseNames(values['unet-names'], '--unet-names');
    const fused = fuseControlNet(
      { model: await readModelFile(cnFile), file: cnFile, ...(cnNames ? { names: cnNames } : {}) },
      { model: await readModelFile(unetFile), file: unetFile, ...(unetNames ? { names: unetNames } : {}) },
      { provenance: { 'qr-art.controlnet': cnFile, 'qr-art.unet': unetFile }, guidance: values.guidance as 'fold' | 'outside' },
    );
    const out = resolve(values.out!);
    const check = async (candidate: string): Promise<void> => {
      const session = await ort.InferenceSession.create(candidate, { logSeverityLevel: 3 });
      try {
        GraphSession.bind('denoiser', out, session, {});
      } finally {
        await session.release();
      }
    };
    const written = await writeCheckedModel(fused, out, mode, values['no-check'] ? null : check);
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MB`;
    if (!values['no-check']) console.log('checked: ONNX Runtime opens it and it fits the denoiser role');
    console.log(`wrote ${out} (${mb(written.bytes)})${written.dataFile ? ` and ${written.dataFile} (${mb(written.dataBytes)})` : ''}`);
    console.log(`use it: "denoiser": { "path": "${out}" } under the model's graphs in the manifest`);
    return 0;
  } catch (err) {
    if (err instanceof FuseError || err instanceof ModelFileError || err instanceof ManifestError || err instanceof GraphSessionError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  }
}

/** The ControlNet and UNet files of a manifest's model, with their name maps. */
async function fromManifestModel(file: string, modelId: string, controlnetId: string | undefined): Promise<{ controlnet: { file: string; names?: NameMap }; unet: { file: string; names?: NameMap } }> {
  const manifest = await loadManifest(file);
  const model = manifest.models[modelId];
  if (!model) throw new ManifestError(`${file}: no model '${modelId}' (${Object.keys(manifest.models).join(', ')})`);
  const cn = controlnetId === undefined ? model.graphs.controlnet : manifest.controlnets[controlnetId];
  if (!cn) throw new ManifestError(`${file}: ${controlnetId === undefined ? `model '${modelId}' lists no controlnet graph` : `no controlnet '${controlnetId}'`}`);
  const unet = model.graphs.unet;
  if (!unet) throw new ManifestError(`${file}: model '${modelId}' lists no unet graph`);
  const names = (spec: { inputs?: Record<string, string>; outputs?: Record<string, string> }): NameMap | undefined =>
    spec.inputs || spec.outputs ? { ...(spec.inputs ? { inputs: spec.inputs } : {}), ...(spec.outputs ? { outputs: spec.outputs } : {}) } : undefined;
  const entry = (spec: typeof unet) => {
    const n = names(spec);
    return { file: manifestPath(manifest, spec.path), ...(n ? { names: n } : {}) };
  };
  return { controlnet: entry(cn), unet: entry(unet) };
}
