/**
 * ONNX Runtime sessions for the models a worker serves: created once at start, each checked
 * against the role its graph plays (roles.ts, graph-session.ts), then shared by every job.
 *
 * Which graphs load: the text encoder and VAE decoder of every model a workflow uses; its
 * `denoiser` (UNet + ControlNet fused) when it has one, else its `unet` and `controlnet`; its
 * `unet` as well when a workflow pairs it with one of the manifest's extra `controlnets`; and
 * the optional graphs (fp32 VAE decoder, VAE encoder, inpainting UNet, NSFW checker, captioner, face detector)
 * it lists.
 *
 * A separate pair is checked at its seam (seams.ts: scale input, matching precisions) and a VAE
 * encoder for randomness inside its graph (vae-encoder-check.ts); both refuse naming the fix.
 *
 * The provider is the operator's: a session that cannot be created on it stops the start with
 * the graph and the cause (providers.ts); with an explicit CPU fallback every graph is created
 * again on the CPU, so one worker never mixes devices. A graph with operators that have no
 * kernel on the provider (ONNX Runtime's SD optimizer's CUDA-only fusions) is the graph's fault,
 * not the device's: no fallback, and the error names the operators and the fix (refusal-note.ts).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import ort from 'onnxruntime-node';
import type { Logger } from 'pino';
import { loadCaptionerConfig, type CaptionerConfig } from './caption-config.ts';
import { prepareClipSkip, type ClipSkipLayer } from './clip-skip.ts';
import { FusedDenoiser, SeparateDenoiser, type Denoiser } from './denoisers.ts';
import { GraphSession, GraphSessionError } from './graph-session.ts';
import {
  displayPath,
  GRAPH_ROLES,
  manifestPath,
  resolveOutpainting,
  resolveWorkflow,
  workflowEntries,
  type GraphRole,
  type GraphSpec,
  type Manifest,
  type ModelSpec,
  type ResolvedOutpainting,
  type ResolvedWorkflow,
} from './manifest.ts';
import { DeviceIo } from './device-io.ts';
import { keepsTensorsOnDevice, providerOptions, type ExecutionProvider } from './providers.ts';
import { loadNsfwChecker, type NsfwChecker } from './nsfw.ts';
import { ClipTokenizer } from './tokenizer.ts';
import { checkVaeEncoderDeterministic } from './vae-encoder-check.ts';
import { checkAttentionRunsOn } from './packed-attention.ts';
import type { V5Model } from '../workflows/catalogue.ts';
import type { WorkflowName } from '../workflows/names.ts';

/** The optional graphs a model may list; `roles` in SessionOptions picks among them. */
const OPTIONAL_ROLES: readonly GraphRole[] = ['vae_decoder_fp32', 'vae_encoder', 'unet_inpaint', 'safety_checker', 'content_filter', 'nsfw_classifier', 'captioner_encoder', 'captioner_decoder', 'face_detector'];

/** A graph that could not be opened on the provider ('load') or does not fit its role ('role'). */
export interface GraphFailure {
  readonly file: string;
  readonly role: GraphRole;
  readonly stage: 'load' | 'role';
  /** The error as ONNX Runtime or the role check gave it. */
  readonly cause: string;
  readonly provider: ExecutionProvider['provider'];
}

export interface SessionOptions {
  readonly executionProvider: ExecutionProvider;
  readonly logger: Logger;
  /** CPU threads per session (ONNX Runtime's default: all cores). */
  readonly intraOpThreads?: number;
  /** Only these model ids (default: every model a workflow uses). */
  readonly models?: readonly string[];
  /** Only these optional roles (default: every optional graph the model lists). */
  readonly roles?: readonly GraphRole[];
  /**
   * What else is known about a graph that failed, appended to the start-up error ('' for
   * nothing): the worker and `qr-art models check` pass the export matrix's
   * (src/models/refusal-note.ts), which sits above this layer. A load failure it explains is the
   * graph's problem, not the device's, so no CPU fallback follows it.
   */
  readonly explainFailure?: (failure: GraphFailure) => Promise<string>;
}

/** The sessions of one model. */
export interface ModelSessions {
  readonly id: string;
  readonly spec: ModelSpec;
  readonly tokenizer: ClipTokenizer;
  readonly graphs: Readonly<Partial<Record<GraphRole, GraphSession>>> & {
    readonly text_encoder: GraphSession;
    readonly vae_decoder: GraphSession;
  };
  /** The model's own UNet + ControlNet, fused or as a pair. */
  readonly denoiser: Denoiser;
  /** Tokenizer and generation settings of the captioner, when both captioner graphs are loaded. */
  readonly captioner?: CaptionerConfig;
  /** The text-encoder layer and final layer norm conditioning comes from, when the manifest's clipSkip is above 1. */
  readonly clipSkip?: ClipSkipLayer;
  /** The NSFW checker nsfw.checker names, when its graph is loaded (nsfw.ts). */
  readonly nsfw?: NsfwChecker;
}

/** What an outpainting run needs: the model (with unet_inpaint and vae_encoder) and the workflow's settings. */
export interface OutpaintModel {
  readonly model: ModelSessions;
  readonly resolved: ResolvedOutpainting;
}

/** What a txt2img run needs: the model and the denoiser of the ControlNet the workflow pairs it with. */
export interface DiffusionModel {
  readonly model: ModelSessions;
  readonly denoiser: Denoiser;
}

/** Thrown when a session cannot be created on the operator's device (not a problem of the graph). */
export class ProviderUnavailableError extends GraphSessionError {
  override readonly name = 'ProviderUnavailableError';
}

export class PipelineSessions {
  constructor(
    readonly manifest: Manifest,
    readonly models: ReadonlyMap<string, ModelSessions>,
    /** Extra ControlNets of the manifest, each paired with a model's unet: `${controlnetId}@${modelId}`. */
    private readonly pairs: ReadonlyMap<string, Denoiser>,
    /** The provider in use (cpu after an explicitly allowed fallback). */
    readonly provider: ExecutionProvider,
    private readonly all: readonly ort.InferenceSession[],
    /** Helper sessions for tensors kept on the device (WebGPU), when the provider can. */
    readonly device?: DeviceIo,
  ) {}

  /** Model, denoiser and defaults for a workflow (v5/v5s: and its `model` value). */
  forWorkflow(workflow: WorkflowName, v5Model?: V5Model): DiffusionModel & { readonly resolved: ResolvedWorkflow } {
    const resolved = resolveWorkflow(this.manifest, workflow, v5Model);
    const model = this.models.get(resolved.modelId);
    if (!model) throw new GraphSessionError(`model '${resolved.modelId}' (for ${workflow}) is not loaded by this worker`);
    const denoiser = resolved.controlnetId === undefined ? model.denoiser : this.pairs.get(`${resolved.controlnetId}@${model.id}`);
    if (!denoiser) throw new GraphSessionError(`controlnet '${resolved.controlnetId}' (for ${workflow}) is not loaded by this worker`);
    return { model, denoiser, resolved };
  }

  /** Every denoiser a model runs: its own, and one per extra ControlNet a workflow pairs it with. */
  denoisersOf(modelId: string): Denoiser[] {
    const model = this.models.get(modelId);
    const extra = [...this.pairs].filter(([key]) => key.endsWith(`@${modelId}`)).map(([, d]) => d);
    return model ? [model.denoiser, ...extra] : extra;
  }

  /** Model and settings of workflows.outpainting; fails naming what is missing (inpainting UNet, VAE encoder). */
  forOutpainting(): OutpaintModel {
    const resolved = resolveOutpainting(this.manifest);
    const model = this.models.get(resolved.modelId);
    if (!model) throw new GraphSessionError(`model '${resolved.modelId}' (for outpainting) is not loaded by this worker`);
    const missing = (['unet_inpaint', 'vae_encoder'] as const).filter((r) => !model.graphs[r]);
    if (missing.length > 0) throw new GraphSessionError(`model '${resolved.modelId}' (for outpainting) has no ${missing.join(' or ')} graph loaded`);
    return { model, resolved };
  }

  async release(): Promise<void> {
    for (const s of this.all) await s.release();
    await this.device?.release();
  }
}

/**
 * Creates and checks every session the manifest's workflows need, on the configured provider.
 * Fails naming the graph when one cannot be created there, unless the provider allows the CPU
 * fallback: then everything is created again on the CPU, with a warning.
 */
export async function createSessions(manifest: Manifest, options: SessionOptions): Promise<PipelineSessions> {
  const p = options.executionProvider;
  try {
    return await createOn(manifest, options, p);
  } catch (err) {
    if (!(err instanceof ProviderUnavailableError) || p.provider === 'cpu' || !p.cpuFallback) throw err;
    options.logger.warn({ err, provider: p.provider }, `${p.provider} is unavailable; every graph runs on the CPU (EXECUTION_PROVIDER=${p.provider},cpu allows this fallback)`);
    return createOn(manifest, options, { provider: 'cpu' });
  }
}

async function createOn(manifest: Manifest, options: SessionOptions, provider: ExecutionProvider): Promise<PipelineSessions> {
  const usedModels = new Set(options.models ?? workflowEntries(manifest).map(([, s]) => s.model));
  for (const id of usedModels) if (!Object.hasOwn(manifest.models, id)) throw new GraphSessionError(`${displayPath(manifest.file)}: no model '${id}'`);
  // Extra ControlNets and the models they run with.
  const pairs = new Map<string, { controlnet: string; model: string }>();
  for (const [, s] of workflowEntries(manifest)) {
    if (usedModels.has(s.model) && s.controlnet !== undefined) pairs.set(`${s.controlnet}@${s.model}`, { controlnet: s.controlnet, model: s.model });
  }

  const cache = new Map<string, Promise<ort.InferenceSession>>();
  const created: ort.InferenceSession[] = [];
  const sessionOptions: ort.InferenceSession.SessionOptions = {
    executionProviders: providerOptions(provider),
    graphOptimizationLevel: 'all',
    ...(options.intraOpThreads !== undefined ? { intraOpNumThreads: options.intraOpThreads, interOpNumThreads: 1 } : {}),
    logSeverityLevel: 3,
  };

  // Where the provider keeps tensors on the device, the fused denoiser's prediction stays there
  // (device-io.ts); its helper sessions are made once a graph has opened on that device.
  const keep = keepsTensorsOnDevice(provider);
  let device: DeviceIo | undefined;
  const deviceIo = async (): Promise<DeviceIo> => (device ??= await DeviceIo.create(providerOptions(provider)));
  const open = async (file: string, role: GraphRole, spec: GraphSpec): Promise<ort.InferenceSession> => {
    const shown = displayPath(file);
    const found = await stat(file).catch(() => undefined);
    if (!found) throw new GraphSessionError(`${shown}: file not found (named in ${displayPath(manifest.file)})`);
    // Exporters write a folder per graph (unet/model.onnx): naming the folder is an easy slip.
    if (!found.isFile()) {
      throw new GraphSessionError(`${shown}: is a folder, not a graph file (graphs.${role}.path in ${displayPath(manifest.file)}): name the .onnx file in it`);
    }
    // A file copied in as root with mode 600 (the worker runs as another user): named, with its role.
    const unreadable = await access(file, constants.R_OK).then(() => undefined, (err: NodeJS.ErrnoException) => err.code ?? 'EACCES');
    if (unreadable) {
      throw new GraphSessionError(`${shown}: cannot be read (${unreadable}; graphs.${role}.path in ${displayPath(manifest.file)}): give the worker's user read access to it`);
    }
    // An interrupted copy leaves an empty file, which ONNX Runtime reports as "ModelProto does not have a graph".
    if (found.size === 0) {
      throw new GraphSessionError(`${shown}: is empty (0 bytes; graphs.${role}.path in ${displayPath(manifest.file)}): the copy or export did not finish`);
    }
    // Loads on every provider, runs on CUDA only: refused before a session is made (packed-attention.ts).
    await checkAttentionRunsOn(provider.provider, file, shown, role);
    try {
      const onDevice = keep && role === 'denoiser' ? { preferredOutputLocation: { [spec.outputs?.noise_pred ?? 'noise_pred']: 'gpu-buffer' as const } } : {};
      const s = await ort.InferenceSession.create(file, { ...sessionOptions, ...onDevice });
      created.push(s);
      return s;
    } catch (err) {
      const cause = (err as Error).message;
      // A failure the export matrix explains (an operator with no kernel here) is the graph's problem, not the device's.
      const note = (await options.explainFailure?.({ file, role, stage: 'load', cause, provider: provider.provider })) ?? '';
      if (note) throw new GraphSessionError(`${shown} (${role}): ONNX Runtime cannot load it on ${provider.provider}: ${cause}${note}`);
      if (provider.provider !== 'cpu') {
        throw new ProviderUnavailableError(`${shown} (${role}): cannot create an ONNX Runtime session on ${provider.provider}: ${cause}`);
      }
      throw new GraphSessionError(`${shown}: ONNX Runtime cannot load it: ${cause}`);
    }
  };
  // One session per file even when several roles or models name it.
  const sessionFor = (file: string, role: GraphRole, spec: GraphSpec): Promise<ort.InferenceSession> => {
    let s = cache.get(file);
    if (!s) cache.set(file, (s = open(file, role, spec)));
    return s;
  };
  const bind = async (role: GraphRole, spec: GraphSpec): Promise<GraphSession> => {
    const file = manifestPath(manifest, spec.path);
    const session = await sessionFor(file, role, spec);
    try {
      return GraphSession.bind(role, displayPath(file), session, spec);
    } catch (err) {
      // A known export that does not fit the role: say which it is and what to use instead (docs/models.md §5).
      if (!(err instanceof GraphSessionError)) throw err;
      const note = (await options.explainFailure?.({ file, role, stage: 'role', cause: err.message, provider: provider.provider })) ?? '';
      throw new GraphSessionError(`${err.message}${note}`);
    }
  };

  try {
    const models = new Map<string, ModelSessions>();
    for (const id of usedModels) {
      const spec = manifest.models[id]!;
      const needsUnet = !spec.graphs.denoiser || [...pairs.values()].some((pair) => pair.model === id);
      const wanted = (role: GraphRole): boolean => {
        if (!spec.graphs[role]) return false;
        if (role === 'denoiser' || role === 'text_encoder' || role === 'vae_decoder') return true;
        if (role === 'unet') return needsUnet;
        if (role === 'controlnet') return !spec.graphs.denoiser;
        return OPTIONAL_ROLES.includes(role) && (!options.roles || options.roles.includes(role));
      };
      const graphs: Partial<Record<GraphRole, GraphSession>> = {};
      for (const role of GRAPH_ROLES) if (wanted(role)) graphs[role] = await bind(role, spec.graphs[role]!);
      // A VAE encoder that samples inside its graph would break seed reproducibility (vae-encoder-check.ts).
      if (graphs.vae_encoder) await checkVaeEncoderDeterministic(manifestPath(manifest, spec.graphs.vae_encoder!.path), graphs.vae_encoder.path);
      const tokenizerDir = manifestPath(manifest, spec.tokenizer);
      let tokenizer: ClipTokenizer;
      try {
        tokenizer = await ClipTokenizer.load(tokenizerDir);
      } catch (err) {
        throw new GraphSessionError(`${displayPath(tokenizerDir)}: tokenizer of model '${id}' cannot be loaded: ${(err as Error).message}`);
      }
      const clipSkip = spec.clipSkip > 1 ? await prepareClipSkip(graphs.text_encoder!, tokenizer, spec.clipSkip, id) : undefined;
      let captioner: CaptionerConfig | undefined;
      if (graphs.captioner_encoder && graphs.captioner_decoder) {
        // The export's tokenizer.json and generation config lie beside its decoder graph.
        const dir = dirname(manifestPath(manifest, spec.graphs.captioner_decoder!.path));
        try {
          captioner = await loadCaptionerConfig(dir);
        } catch (err) {
          throw new GraphSessionError(`${displayPath(dir)}: captioner of model '${id}' cannot be loaded: ${(err as Error).message}`);
        }
      }
      const nsfw = await loadNsfwChecker(id, spec.nsfw, graphs, (role) => manifestPath(manifest, spec.graphs[role]!.path));
      const denoiser = graphs.denoiser ? new FusedDenoiser(graphs.denoiser, keep ? await deviceIo() : undefined) : new SeparateDenoiser(graphs.unet!, graphs.controlnet!);
      const m: ModelSessions = { id, spec, tokenizer, graphs: graphs as ModelSessions['graphs'], denoiser, ...(captioner ? { captioner } : {}), ...(clipSkip ? { clipSkip } : {}), ...(nsfw ? { nsfw } : {}) };
      checkModel(m, options.logger);
      models.set(id, m);
    }
    const denoisers = new Map<string, Denoiser>();
    for (const [key, pair] of pairs) {
      const unet = models.get(pair.model)!.graphs.unet!;
      denoisers.set(key, new SeparateDenoiser(unet, await bind('controlnet', manifest.controlnets[pair.controlnet]!)));
    }
    return new PipelineSessions(manifest, models, denoisers, provider, created, device);
  } catch (err) {
    for (const s of created) await s.release().catch(() => undefined);
    await device?.release().catch(() => undefined);
    throw err;
  }
}

/** Cross-graph checks: the text encoder's width is what the denoising graphs read. */
function checkModel(m: ModelSessions, log: Logger): void {
  const width = m.graphs.text_encoder.output('last_hidden_state').shape[2];
  for (const g of [...m.denoiser.graphs, m.graphs.unet_inpaint]) {
    if (!g) continue;
    const w = g.input('encoder_hidden_states').shape[2];
    if (typeof width === 'number' && typeof w === 'number' && width !== w) {
      throw new GraphSessionError(`${g.path}: input '${g.input('encoder_hidden_states').name}' has width ${w}, the text encoder (${m.graphs.text_encoder.path}) gives ${width}`);
    }
  }
  const declared = m.spec.dtype === 'fp16' ? 'float16' : 'float32';
  const first = m.denoiser.graphs.at(-1)!;
  const actual = first.input('sample').type;
  if (m.denoiser.kind === 'separate' && actual !== declared) {
    log.warn({ model: m.id, file: first.path, declared: m.spec.dtype, actual }, 'manifest dtype differs from the UNet sample input; tensors follow the graph');
  }
}
