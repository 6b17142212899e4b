/**
 * `qr-art models check --manifest FILE [--provider cpu|cuda|webgpu]`: validates a deployment's
 * models before a worker starts on them. For every graph (and tokenizer) a model lists it reads
 * the file's facts and names the export-matrix row it matches (docs/models.md §5); then it
 * creates every session on the chosen provider exactly as a worker does (createSessions) and runs
 * one tiny step through each role: the text encoder on one prompt, each denoiser one step at the
 * smallest size with the VAE decoder after it, the VAE encoder, the inpainting UNet, the NSFW
 * checker, the captioner for one token, the face detector on one image. It prints one row per
 * graph with the time its step took inside ONNX Runtime. A manifest the worker would refuse
 * prints the start-up error (which names the matched row's fix) and exits 1.
 */
import { loadConfig, MAX_CUDA_DEVICE_ID } from '../config.ts';
import { pino } from 'pino';
import { matchContracts, type ExportContract } from '../models/contracts/index.ts';
import { readGraphFacts, readTokenizerFacts } from '../models/graph-facts.ts';
import { explainGraphFailure } from '../models/refusal-note.ts';
import { rawImage } from '../image/raw.ts';
import { captionImage } from '../pipeline/captioner.ts';
import { detectFaces } from '../pipeline/face-detect.ts';
import { vaeEncode } from '../pipeline/diffusion-parts.ts';
import { setRunObserver, type GraphSession } from '../pipeline/graph-session.ts';
import { displayPath, GRAPH_ROLES, loadManifest, manifestPath, type GraphRole, type Manifest } from '../pipeline/manifest.ts';
import { detectNsfw } from '../pipeline/nsfw.ts';
import { EXECUTION_PROVIDER_VALUES, parseExecutionProvider, type ExecutionProvider, type ExecutionProviderValue } from '../pipeline/providers.ts';
import { createSessions, type ModelSessions, type PipelineSessions } from '../pipeline/sessions.ts';
import { floatTensor, type FloatType } from '../pipeline/tensors.ts';
import { generate } from '../pipeline/txt2img.ts';

export interface CheckRow {
  readonly model: string;
  readonly role: string;
  readonly file: string;
  readonly contracts: readonly ExportContract[];
  /** ms inside ONNX Runtime for the role's tiny step; undefined when it did not run. */
  ms?: number;
}

export interface CheckResult {
  readonly rows: readonly CheckRow[];
  /** The start-up error, when the worker would refuse the manifest. */
  readonly error?: string;
}

/** The matrix rows each graph and tokenizer of each model matches (nothing is run). */
export async function matchManifest(manifest: Manifest): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  for (const [id, model] of Object.entries(manifest.models)) {
    const graphs = model.graphs as Readonly<Record<string, { path: string } | undefined>>;
    for (const role of [...GRAPH_ROLES, ...Object.keys(graphs).filter((r) => !(GRAPH_ROLES as readonly string[]).includes(r))]) {
      const spec = graphs[role];
      if (!spec) continue;
      const file = manifestPath(manifest, spec.path);
      const contracts = await readGraphFacts(file, role as GraphRole).then(matchContracts, () => []);
      rows.push({ model: id, role, file: displayPath(file), contracts });
    }
    const dir = manifestPath(manifest, model.tokenizer);
    const contracts = await readTokenizerFacts(dir).then(matchContracts, () => []);
    rows.push({ model: id, role: 'tokenizer', file: displayPath(dir), contracts });
  }
  return rows;
}

/** Runs the check (sessions on `provider`, one tiny step per role); never throws for a refused manifest. */
export async function checkManifest(file: string, provider: ExecutionProvider, intraOpThreads?: number): Promise<CheckResult> {
  const manifest = await loadManifest(file);
  const rows = await matchManifest(manifest);
  let sessions: PipelineSessions;
  try {
    sessions = await createSessions(manifest, { executionProvider: provider, logger: pino({ level: 'silent' }), models: Object.keys(manifest.models), explainFailure: explainGraphFailure, ...(intraOpThreads ? { intraOpThreads } : {}) });
  } catch (err) {
    return { rows, error: (err as Error).message };
  }
  const timed = new Map<GraphSession, number>();
  setRunObserver((graph, ms) => timed.set(graph, (timed.get(graph) ?? 0) + ms));
  let stepError: string | undefined;
  try {
    for (const model of sessions.models.values()) {
      // A graph that loads but cannot run its step is refused like one that does not load: said, not thrown.
      try {
        await tinySteps(model, sessions);
      } catch (err) {
        stepError = `model '${model.id}': a step failed: ${(err as Error).message}`;
        break;
      }
      for (const row of rows) {
        if (row.model !== model.id) continue;
        const graph = Object.values(model.graphs).find((g) => g?.role === row.role) ?? sessions.denoisersOf(model.id).flatMap((d) => d.graphs).find((g) => g.role === row.role);
        if (graph && timed.has(graph)) row.ms = timed.get(graph)!;
      }
    }
  } finally {
    setRunObserver(undefined);
    await sessions.release();
  }
  return stepError ? { rows, error: stepError } : { rows };
}

/** One tiny pass through every role a model has loaded. */
async function tinySteps(model: ModelSessions, sessions: PipelineSessions): Promise<void> {
  const side = Math.max(64, model.spec.sizeMultiple);
  const grey = rawImage(new Uint8Array(side * side * 3).fill(128), side, side, 3);
  let image = grey;
  for (const denoiser of sessions.denoisersOf(model.id)) {
    const request = { prompt: 'a red castle', negativePrompt: '', seed: 1, batchSize: 1, steps: 1, guidance: 2, scheduler: model.spec.scheduler.name, control: grey, controlScale: 1, controlStart: 0, controlEnd: 1, width: side, height: side, nativeSize: side, refine: false } as const;
    image = (await generate(request, { model, denoiser })).images[0]!;
  }
  const g = model.graphs as Readonly<Partial<Record<string, GraphSession>>>;
  if (g.vae_encoder) await vaeEncode(model, new Float32Array(3 * side * side), side, side);
  if (g.unet_inpaint) {
    const u = g.unet_inpaint;
    const l = side / 8;
    await u.run({
      sample: floatTensor(u.floatType('sample'), new Float32Array(9 * l * l), [1, 9, l, l]),
      timestep: u.timestepTensor(1, 1),
      encoder_hidden_states: floatTensor(u.floatType('encoder_hidden_states'), new Float32Array(77 * 768), [1, 77, 768]),
    });
  }
  if (g.vae_decoder_fp32) {
    const l = side / 8;
    await g.vae_decoder_fp32.run({ latent_sample: floatTensor('float32' as FloatType, new Float32Array(4 * l * l), [1, 4, l, l]) });
  }
  // The checker nsfw.checker names (safety checker, content filter or classifier).
  if (model.nsfw) await detectNsfw([image], model.nsfw);
  if (model.captioner) await captionImage(image, model, { maxTokens: 1, beams: 1 });
  if (g.face_detector) await detectFaces(image, g.face_detector, model.spec.faceDetector);
}

const pad = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
};

/**
 * A graph that matches several rows (`a = b`): their facts are the same, so the file cannot tell
 * them apart (an LCM-LoRA fused into the weights, a fused pair of mixed precision or an fp16
 * export, a UNet optimized for CUDA whose names are the plain UNet's). The row shown first, whose
 * exporter, graph and verdict fill the columns, is one that agrees with what the check found:
 * a refusing row when the worker refused the manifest, a serving or adapting one when it started.
 */
function shownFirst(contracts: readonly ExportContract[], refused: boolean): ExportContract[] {
  const agrees = (c: ExportContract) => (c.verdict === 'refuses') === refused;
  return [...contracts.filter(agrees), ...contracts.filter((c) => !agrees(c))];
}

const TIES_NOTE = "a = b: the graph's names, dtypes, axes and operators match each of these rows (the file cannot tell them apart); the columns show the first, the one that agrees with the result below";

/** The table `qr-art models check` prints. */
export function formatCheck(result: CheckResult): string {
  const head = ['model', 'role', 'file', 'matrix row', 'exporter', 'graph', 'verdict', 'ms'];
  const body = result.rows.map((r) => {
    const [c, ...others] = shownFirst(r.contracts, result.error !== undefined);
    const more = others.length > 0 ? ` = ${others.map((x) => x.id).join(' = ')}` : '';
    return [r.model, r.role, r.file, c ? `${c.id}${more}` : 'no matrix row', c?.exporter ?? '-', c?.graph ?? '-', c?.verdict ?? '-', r.ms === undefined ? '-' : r.ms.toFixed(1)];
  });
  const table = pad([head, ...body]);
  const ties = result.rows.some((r) => r.contracts.length > 1) ? `\n${TIES_NOTE}` : '';
  if (!result.error) return `${table}${ties}\nok: every graph loads and runs a step`;
  return `${table}${ties}\nrefused: the worker would not start on this manifest:\n${result.error}`;
}

export const CHECK_USAGE = `qr-art models check --manifest FILE [--provider cpu|cuda|cuda,cpu|webgpu|webgpu,cpu] [--device-id N]

Loads every graph of every model in the manifest on the provider (as a worker would), runs one
tiny step through each role, and prints per graph the export-matrix row it matched
(docs/models.md §5) and the step's time. Exits 1 when a graph is refused or its step fails.
It checks every model listed, where a worker loads only the models its workflows name: a
broken model no workflow uses is refused here though a worker would start.
The provider is --provider, else EXECUTION_PROVIDER, else cpu, and the CUDA device --device-id,
else CUDA_DEVICE_ID, else 0 (what a worker with the same environment uses); INFERENCE_THREADS
bounds the CPU threads as for a worker.`;

/** The `check` subcommand: exit 0 when every graph loads and runs, 1 when refused, 2 on bad flags. */
export async function modelsCheckCommand(argv: string[]): Promise<number> {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({
    args: argv,
    options: { manifest: { type: 'string' }, provider: { type: 'string' }, 'device-id': { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    console.log(CHECK_USAGE);
    return 0;
  }
  const config = loadConfig();
  // As a worker in the same environment: a check on the CPU said ok where a CUDA worker refused.
  const provider = values.provider ?? config.EXECUTION_PROVIDER;
  const deviceFlag = values['device-id'];
  const deviceId = deviceFlag === undefined ? config.CUDA_DEVICE_ID : /^\d+$/.test(deviceFlag) ? Number(deviceFlag) : undefined;
  const problems = [
    ...(values.manifest ? [] : ['--manifest is required']),
    ...((EXECUTION_PROVIDER_VALUES as readonly string[]).includes(provider) ? [] : [`--provider must be one of ${EXECUTION_PROVIDER_VALUES.join(', ')}, got '${provider}'`]),
    ...(deviceId === undefined || deviceId > MAX_CUDA_DEVICE_ID ? [`--device-id must be a whole number from 0 to ${MAX_CUDA_DEVICE_ID}, got '${deviceFlag}'`] : []),
  ];
  if (problems.length > 0) {
    console.error(`${problems.join('\n')}\n\n${CHECK_USAGE}`);
    return 2;
  }
  const executionProvider = parseExecutionProvider(provider as ExecutionProviderValue, deviceId);
  let result: CheckResult;
  try {
    result = await checkManifest(values.manifest!, executionProvider, config.INFERENCE_THREADS);
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  }
  const text = formatCheck(result);
  if (result.error) console.error(text);
  else console.log(text);
  return result.error ? 1 : 0;
}
