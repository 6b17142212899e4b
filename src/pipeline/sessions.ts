/**
 * ONNX Runtime sessions for the models a worker serves: created once at start, checked against
 * the role each graph plays, warmed up, then shared by every job.
 *
 * Checking reads names, dtypes and shapes from the session itself (inputMetadata /
 * outputMetadata) and fails at start with the file and the mismatch, so a wrong export is an
 * operator error at boot rather than an ONNX Runtime error in the middle of a job. Inputs and
 * outputs are addressed by role; the manifest maps a role to the export's name where it differs.
 */
import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import ort from 'onnxruntime-node';
import type { Logger } from 'pino';
import { loadCaptionerConfig, type CaptionerConfig } from './caption-config.ts';
import { ClipTokenizer } from './tokenizer.ts';
import {
  displayPath,
  GRAPH_ROLES,
  manifestPath,
  REQUIRED_ROLES,
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
import { floatTensor, idsTensor, numberTensor, type FloatType } from './tensors.ts';
import type { V5Model } from '../workflows/catalogue.ts';
import type { WorkflowName } from '../workflows/names.ts';

// ---------------------------------------------------------------------------------------------
// Role contracts

/** SD1.5's 13 ControlNet residuals, in UNet input order: [name, channels, downsampling]. */
export const CONTROL_RESIDUALS: readonly { readonly role: string; readonly channels: number; readonly factor: number }[] = [
  ...(
    [
      [320, 1], [320, 1], [320, 1], [320, 2], [640, 2], [640, 2],
      [640, 4], [1280, 4], [1280, 4], [1280, 8], [1280, 8], [1280, 8],
    ] as const
  ).map(([channels, factor], i) => ({ role: `down_block_${i}_additional_residual`, channels, factor })),
  { role: 'mid_block_additional_residual', channels: 1280, factor: 8 },
];

const FLOATS = ['float32', 'float16'];
const TIMESTEP_TYPES = ['float32', 'float16', 'float64', 'int64', 'int32'];
const IDS = ['int32', 'int64'];

interface IoContract {
  readonly role: string;
  readonly types: readonly string[];
  /** Allowed ranks (symbolic or fixed dims alike). */
  readonly ranks: readonly number[];
  /** Fixed sizes some axes must have when the graph fixes them: axis → allowed sizes. */
  readonly dims?: Readonly<Record<number, readonly number[]>>;
  readonly optional?: boolean;
}

interface RoleContract {
  readonly inputs: readonly IoContract[];
  readonly outputs: readonly IoContract[];
}

const latent = (role: string, channels: number[]): IoContract => ({ role, types: FLOATS, ranks: [4], dims: { 1: channels } });
const image = (role: string): IoContract => ({ role, types: FLOATS, ranks: [4], dims: { 1: [3] } });
const timestep: IoContract = { role: 'timestep', types: TIMESTEP_TYPES, ranks: [0, 1] };
const hidden: IoContract = { role: 'encoder_hidden_states', types: FLOATS, ranks: [3] };
const residuals: IoContract[] = CONTROL_RESIDUALS.map((r) => ({ role: r.role, types: FLOATS, ranks: [4], dims: { 1: [r.channels] } }));

export const ROLE_CONTRACTS: Readonly<Record<GraphRole, RoleContract>> = {
  text_encoder: {
    inputs: [{ role: 'input_ids', types: IDS, ranks: [2], dims: { 1: [77] } }],
    outputs: [{ role: 'last_hidden_state', types: FLOATS, ranks: [3] }],
  },
  unet: { inputs: [latent('sample', [4]), timestep, hidden, ...residuals], outputs: [latent('out_sample', [4])] },
  unet_inpaint: { inputs: [latent('sample', [9]), timestep, hidden], outputs: [latent('out_sample', [4])] },
  controlnet: {
    inputs: [
      latent('sample', [4]),
      timestep,
      hidden,
      image('controlnet_cond'),
      { role: 'conditioning_scale', types: ['float64', 'float32', 'float16'], ranks: [0, 1] },
    ],
    outputs: residuals,
  },
  vae_decoder: { inputs: [latent('latent_sample', [4])], outputs: [image('sample')] },
  // Older optimum exports give `latent_sample` (4 ch), newer ones `latent_parameters` (mean ‖ logvar, 8 ch).
  vae_encoder: { inputs: [image('sample')], outputs: [latent('latent_sample', [4, 8])] },
  safety_checker: {
    inputs: [image('clip_input'), { role: 'images', types: FLOATS, ranks: [4], dims: { 3: [3] }, optional: true }],
    outputs: [{ role: 'has_nsfw_concepts', types: ['bool'], ranks: [1] }],
  },
  captioner_encoder: { inputs: [image('pixel_values')], outputs: [{ role: 'last_hidden_state', types: FLOATS, ranks: [3] }] },
  captioner_decoder: {
    inputs: [
      { role: 'input_ids', types: IDS, ranks: [2] },
      hidden,
      { role: 'attention_mask', types: IDS, ranks: [2], optional: true },
      { role: 'encoder_attention_mask', types: IDS, ranks: [2], optional: true },
    ],
    outputs: [{ role: 'logits', types: FLOATS, ranks: [3] }],
  },
};

/** What each role's checks call an axis, for messages. */
const AXIS_NAME: Readonly<Record<number, string>> = { 1: 'channels', 3: 'channels (last axis)' };

// ---------------------------------------------------------------------------------------------
// Graph sessions

export interface IoInfo {
  readonly role: string;
  readonly name: string;
  readonly type: string;
  readonly shape: readonly (number | string)[];
}

export class GraphSessionError extends Error {
  override readonly name = 'GraphSessionError';
}

/** One ONNX graph playing one role, addressed by role names. */
export class GraphSession {
  private readonly inputsByRole = new Map<string, IoInfo>();
  private readonly outputsByRole = new Map<string, IoInfo>();

  private constructor(
    readonly role: GraphRole,
    /** The file, as messages show it. */
    readonly path: string,
    readonly session: ort.InferenceSession,
  ) {}

  /** Validates `session` against `role` (see ROLE_CONTRACTS); throws naming the file. */
  static bind(role: GraphRole, path: string, session: ort.InferenceSession, spec: Pick<GraphSpec, 'inputs' | 'outputs'>): GraphSession {
    const g = new GraphSession(role, path, session);
    const contract = ROLE_CONTRACTS[role];
    const inputs = metadataByName(session.inputMetadata);
    const outputs = metadataByName(session.outputMetadata);
    const fail = (problem: string): never => {
      throw new GraphSessionError(`${path}: ${problem}`);
    };
    const bindSide = (
      side: 'input' | 'output',
      wanted: readonly IoContract[],
      available: Map<string, ort.InferenceSession.ValueMetadata>,
      names: Record<string, string> | undefined,
      into: Map<string, IoInfo>,
    ): void => {
      for (const key of Object.keys(names ?? {})) {
        if (!wanted.some((c) => c.role === key)) {
          fail(`graphs.${role}.${side}s names '${key}', which is not an ${side} role of ${role} (${wanted.map((c) => c.role).join(', ')})`);
        }
      }
      for (const c of wanted) {
        const name = names?.[c.role] ?? c.role;
        const meta = available.get(name);
        if (!meta) {
          if (c.optional) continue;
          const mapped = names?.[c.role] !== undefined ? ` (mapped by graphs.${role}.${side}s)` : '';
          fail(
            `the ${role} role needs an ${side} '${name}'${mapped} but the graph's ${side}s are ${[...available.keys()].map((n) => `'${n}'`).join(', ')}` +
              (mapped ? '' : `; map it under graphs.${role}.${side}s if the export names it differently`),
          );
        }
        if (!meta!.isTensor) fail(`${side} '${name}' is not a tensor`);
        const tm = meta as ort.InferenceSession.TensorValueMetadata;
        if (!c.types.includes(tm.type)) fail(`${side} '${name}' is ${tm.type}, the ${role} role needs ${c.types.join(' or ')}`);
        // A graph without shape information for a value (rank 0 and not a scalar role) still has to have a usable rank.
        if (!c.ranks.includes(tm.shape.length)) {
          fail(`${side} '${name}' has rank ${tm.shape.length} [${tm.shape.join(', ')}], the ${role} role needs rank ${c.ranks.join(' or ')}`);
        }
        for (const [axis, allowed] of Object.entries(c.dims ?? {})) {
          const size = tm.shape[Number(axis)];
          if (typeof size === 'number' && size > 0 && !allowed.includes(size)) {
            const what = AXIS_NAME[Number(axis)] ?? `size on axis ${axis}`;
            fail(`${side} '${name}' has ${size} ${what}, the ${role} role needs ${allowed.join(' or ')}`);
          }
        }
        into.set(c.role, { role: c.role, name, type: tm.type, shape: tm.shape });
      }
    };
    bindSide('input', contract.inputs, inputs, spec.inputs, g.inputsByRole);
    bindSide('output', contract.outputs, outputs, spec.outputs, g.outputsByRole);
    // Every graph input must be fed: an input no role covers cannot be.
    const fed = new Set([...g.inputsByRole.values()].map((i) => i.name));
    const unfed = session.inputNames.filter((n) => !fed.has(n));
    if (unfed.length > 0) fail(`input${unfed.length > 1 ? 's' : ''} ${unfed.map((n) => `'${n}'`).join(', ')} ${unfed.length > 1 ? 'are' : 'is'} not fed by the ${role} role`);
    return g;
  }

  input(role: string): IoInfo {
    const info = this.inputsByRole.get(role);
    if (!info) throw new GraphSessionError(`${this.path}: the ${this.role} graph has no input for role '${role}'`);
    return info;
  }

  hasInput(role: string): boolean {
    return this.inputsByRole.has(role);
  }

  output(role: string): IoInfo {
    const info = this.outputsByRole.get(role);
    if (!info) throw new GraphSessionError(`${this.path}: the ${this.role} graph has no output for role '${role}'`);
    return info;
  }

  /** Float type of an input (fp16 exports take Uint16Array bits). */
  floatType(role: string): FloatType {
    return this.input(role).type as FloatType;
  }

  /** Feeds by role; returns the requested output roles (all bound ones by default) by role. */
  async run(feeds: Readonly<Record<string, ort.Tensor>>, outputRoles?: readonly string[]): Promise<Record<string, ort.Tensor>> {
    const byName: Record<string, ort.Tensor> = {};
    for (const [role, tensor] of Object.entries(feeds)) byName[this.input(role).name] = tensor;
    const roles = outputRoles ?? [...this.outputsByRole.keys()];
    const names = roles.map((r) => this.output(r).name);
    const out = await this.session.run(byName, names);
    const result: Record<string, ort.Tensor> = {};
    roles.forEach((r, i) => (result[r] = out[names[i]!]!));
    return result;
  }

  /**
   * The timestep as this graph wants it: its own dtype, and a scalar, [1] or [batch] as its
   * rank and fixed size say.
   */
  timestepTensor(t: number, batch: number): ort.Tensor {
    const info = this.input('timestep');
    if (info.shape.length === 0) return numberTensor(info.type, [t], []);
    const n = info.shape[0] === 1 ? 1 : batch;
    return numberTensor(info.type, new Array<number>(n).fill(t), [n]);
  }

  /** conditioning_scale in the graph's dtype and rank (a double scalar in OnnxStack exports). */
  scaleTensor(scale: number): ort.Tensor {
    const info = this.input('conditioning_scale');
    return numberTensor(info.type, [scale], info.shape.length === 0 ? [] : [1]);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

function metadataByName(meta: readonly ort.InferenceSession.ValueMetadata[]): Map<string, ort.InferenceSession.ValueMetadata> {
  return new Map(meta.map((m) => [m.name, m]));
}

// ---------------------------------------------------------------------------------------------
// Creating everything

export type ExecutionProvider = { readonly provider: 'cuda'; readonly deviceId?: number } | { readonly provider: 'cpu' };

export interface SessionOptions {
  readonly executionProvider: ExecutionProvider;
  readonly logger: Logger;
  /** CPU threads per session (ONNX Runtime's default: all cores). */
  readonly intraOpThreads?: number;
  /** Run each graph once at a tiny size so the first job does not pay for lazy initialisation (default true). */
  readonly warmUp?: boolean;
  /** Only these model ids (default: every model a workflow uses). */
  readonly models?: readonly string[];
  /** Only these optional roles (default: every graph the model lists); the four required ones always load. */
  readonly roles?: readonly GraphRole[];
}

/** The sessions of one model. */
export interface ModelSessions {
  readonly id: string;
  readonly spec: ModelSpec;
  readonly tokenizer: ClipTokenizer;
  readonly graphs: Readonly<Partial<Record<GraphRole, GraphSession>>> & {
    readonly text_encoder: GraphSession;
    readonly unet: GraphSession;
    readonly controlnet: GraphSession;
    readonly vae_decoder: GraphSession;
  };
  /** Tokenizer and generation settings of the captioner, when both captioner graphs are loaded. */
  readonly captioner?: CaptionerConfig;
}

/** What an outpainting run needs: the model (with unet_inpaint and vae_encoder) and the workflow's settings. */
export interface OutpaintModel {
  readonly model: ModelSessions;
  readonly resolved: ResolvedOutpainting;
}

/** What a txt2img run needs: the model and the ControlNet the workflow pairs it with. */
export interface DiffusionModel {
  readonly model: ModelSessions;
  readonly controlnet: GraphSession;
}

export class PipelineSessions {
  constructor(
    readonly manifest: Manifest,
    readonly models: ReadonlyMap<string, ModelSessions>,
    readonly controlnets: ReadonlyMap<string, GraphSession>,
    /** The provider actually in use (cpu after a CUDA fallback). */
    readonly provider: ExecutionProvider,
    private readonly all: readonly ort.InferenceSession[],
  ) {}

  /** Model, ControlNet and defaults for a workflow (v5/v5s: and its `model` value). */
  forWorkflow(workflow: WorkflowName, v5Model?: V5Model): DiffusionModel & { readonly resolved: ResolvedWorkflow } {
    const resolved = resolveWorkflow(this.manifest, workflow, v5Model);
    const model = this.models.get(resolved.modelId);
    if (!model) throw new GraphSessionError(`model '${resolved.modelId}' (for ${workflow}) is not loaded by this worker`);
    const controlnet = resolved.controlnetId === undefined ? model.graphs.controlnet : this.controlnets.get(resolved.controlnetId);
    if (!controlnet) throw new GraphSessionError(`controlnet '${resolved.controlnetId}' (for ${workflow}) is not loaded by this worker`);
    return { model, controlnet, resolved };
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
  }
}

/**
 * Creates, checks and warms up every session the manifest's workflows need. CUDA falls back to
 * CPU (once, with a warning) when its provider cannot be initialised.
 */
export async function createSessions(manifest: Manifest, options: SessionOptions): Promise<PipelineSessions> {
  const log = options.logger;
  const usedModels = new Set(options.models ?? workflowEntries(manifest).map(([, s]) => s.model));
  const usedControlnets = new Set(
    workflowEntries(manifest)
      .filter(([, s]) => usedModels.has(s.model) && s.controlnet !== undefined)
      .map(([, s]) => s.controlnet!),
  );
  for (const id of usedModels) if (!Object.hasOwn(manifest.models, id)) throw new GraphSessionError(`${displayPath(manifest.file)}: no model '${id}'`);

  let provider = options.executionProvider;
  const cache = new Map<string, Promise<ort.InferenceSession>>();
  const created: ort.InferenceSession[] = [];

  const sessionOptions = (p: ExecutionProvider): ort.InferenceSession.SessionOptions => ({
    executionProviders: p.provider === 'cuda' ? [{ name: 'cuda', deviceId: p.deviceId ?? 0 }] : ['cpu'],
    graphOptimizationLevel: 'all',
    ...(options.intraOpThreads !== undefined ? { intraOpNumThreads: options.intraOpThreads, interOpNumThreads: 1 } : {}),
    logSeverityLevel: 3,
  });

  const open = async (file: string): Promise<ort.InferenceSession> => {
    const shown = displayPath(file);
    try {
      await access(file);
    } catch {
      throw new GraphSessionError(`${shown}: file not found (named in ${displayPath(manifest.file)})`);
    }
    if (provider.provider === 'cuda') {
      try {
        const s = await ort.InferenceSession.create(file, sessionOptions(provider));
        created.push(s);
        return s;
      } catch (err) {
        log.warn({ err, file: shown, deviceId: provider.deviceId ?? 0 }, 'CUDA execution provider unavailable; falling back to CPU for every model');
        provider = { provider: 'cpu' };
      }
    }
    try {
      const s = await ort.InferenceSession.create(file, sessionOptions(provider));
      created.push(s);
      return s;
    } catch (err) {
      throw new GraphSessionError(`${shown}: ONNX Runtime cannot load it: ${(err as Error).message}`);
    }
  };
  // One session per file even when several roles or models name it.
  const sessionFor = (file: string): Promise<ort.InferenceSession> => {
    let p = cache.get(file);
    if (!p) cache.set(file, (p = open(file)));
    return p;
  };
  const bind = async (role: GraphRole, spec: GraphSpec): Promise<GraphSession> => {
    const file = manifestPath(manifest, spec.path);
    return GraphSession.bind(role, displayPath(file), await sessionFor(file), spec);
  };

  try {
    const models = new Map<string, ModelSessions>();
    for (const id of usedModels) {
      const spec = manifest.models[id]!;
      const graphs: Partial<Record<GraphRole, GraphSession>> = {};
      // Sequential: the first CUDA failure must switch the provider before the next graph opens.
      for (const role of GRAPH_ROLES) {
        const g = spec.graphs[role];
        if (!g || (options.roles && !options.roles.includes(role) && !REQUIRED_ROLES.includes(role))) continue;
        graphs[role] = await bind(role, g);
      }
      const tokenizerDir = manifestPath(manifest, spec.tokenizer);
      let tokenizer: ClipTokenizer;
      try {
        tokenizer = await ClipTokenizer.load(tokenizerDir);
      } catch (err) {
        throw new GraphSessionError(`${displayPath(tokenizerDir)}: tokenizer of model '${id}' cannot be loaded: ${(err as Error).message}`);
      }
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
      const m: ModelSessions = { id, spec, tokenizer, graphs: graphs as ModelSessions['graphs'], ...(captioner ? { captioner } : {}) };
      checkModel(m, log);
      models.set(id, m);
    }
    const controlnets = new Map<string, GraphSession>();
    for (const id of usedControlnets) controlnets.set(id, await bind('controlnet', manifest.controlnets[id]!));

    if (options.warmUp ?? true) {
      for (const m of models.values()) {
        const started = performance.now();
        await warmUp(m, [...controlnets.values()]);
        log.info({ model: m.id, provider: provider.provider, ms: Math.round(performance.now() - started) }, 'model sessions ready');
      }
    }
    return new PipelineSessions(manifest, models, controlnets, provider, created);
  } catch (err) {
    for (const s of created) await s.release().catch(() => undefined);
    throw err;
  }
}

/** Cross-graph checks: the text encoder's width is what the UNet and ControlNet read. */
function checkModel(m: ModelSessions, log: Logger): void {
  const width = m.graphs.text_encoder.output('last_hidden_state').shape[2];
  for (const g of [m.graphs.unet, m.graphs.controlnet, m.graphs.unet_inpaint]) {
    if (!g) continue;
    const w = g.input('encoder_hidden_states').shape[2];
    if (typeof width === 'number' && typeof w === 'number' && width !== w) {
      throw new GraphSessionError(`${g.path}: input '${g.input('encoder_hidden_states').name}' has width ${w}, the text encoder (${m.graphs.text_encoder.path}) gives ${width}`);
    }
  }
  const declared = m.spec.dtype === 'fp16' ? 'float16' : 'float32';
  const actual = m.graphs.unet.input('sample').type;
  if (actual !== declared) log.warn({ model: m.id, file: m.graphs.unet.path, declared: m.spec.dtype, actual }, 'manifest dtype differs from the UNet sample input; tensors follow the graph');
}

// ---------------------------------------------------------------------------------------------
// Warm-up

const WARM_LATENT = 8;

function zeros(g: GraphSession, role: string, dims: number[]): ort.Tensor {
  return floatTensor(g.floatType(role), new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
}

/** One tiny run of every graph (the UNet and ControlNets at a 64×64 image). */
async function warmUp(m: ModelSessions, extraControlnets: readonly GraphSession[]): Promise<void> {
  const { text_encoder, unet, controlnet, vae_decoder, vae_encoder, unet_inpaint, safety_checker, captioner_encoder, captioner_decoder } = m.graphs;
  const ids = m.tokenizer.encodeBatch(['']);
  const text = await text_encoder.run({ input_ids: idsTensor(text_encoder.input('input_ids').type, ids, [1, 77]) }, ['last_hidden_state']);
  const ehs = text.last_hidden_state!;
  const s = WARM_LATENT;
  const latentFeeds = (g: GraphSession, channels = 4): Record<string, ort.Tensor> => ({
    sample: zeros(g, 'sample', [1, channels, s, s]),
    timestep: g.timestepTensor(500, 1),
    encoder_hidden_states: ehs.type === g.input('encoder_hidden_states').type ? ehs : zeros(g, 'encoder_hidden_states', [...ehs.dims]),
  });
  let res: Record<string, ort.Tensor> = {};
  for (const cn of [controlnet, ...extraControlnets]) {
    res = await cn.run({ ...latentFeeds(cn), controlnet_cond: zeros(cn, 'controlnet_cond', [1, 3, 8 * s, 8 * s]), conditioning_scale: cn.scaleTensor(1) });
  }
  await unet.run({ ...latentFeeds(unet), ...res });
  await vae_decoder.run({ latent_sample: zeros(vae_decoder, 'latent_sample', [1, 4, s, s]) });
  if (vae_encoder) await vae_encoder.run({ sample: zeros(vae_encoder, 'sample', [1, 3, 8 * s, 8 * s]) });
  if (unet_inpaint) await unet_inpaint.run(latentFeeds(unet_inpaint, 9));
  if (safety_checker) {
    const feeds: Record<string, ort.Tensor> = { clip_input: zeros(safety_checker, 'clip_input', [1, 3, 224, 224]) };
    if (safety_checker.hasInput('images')) feeds.images = zeros(safety_checker, 'images', [1, 64, 64, 3]);
    await safety_checker.run(feeds);
  }
  if (captioner_encoder && captioner_decoder) {
    const px = captioner_encoder.input('pixel_values').shape;
    const side = (i: number): number => (typeof px[i] === 'number' ? (px[i] as number) : 224);
    const enc = await captioner_encoder.run({ pixel_values: zeros(captioner_encoder, 'pixel_values', [1, 3, side(2), side(3)]) });
    const hiddenOut = enc.last_hidden_state!;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: idsTensor(captioner_decoder.input('input_ids').type, Int32Array.of(1), [1, 1]),
      encoder_hidden_states: hiddenOut,
    };
    if (captioner_decoder.hasInput('attention_mask')) feeds.attention_mask = idsTensor(captioner_decoder.input('attention_mask').type, Int32Array.of(1), [1, 1]);
    if (captioner_decoder.hasInput('encoder_attention_mask')) {
      const n = hiddenOut.dims[1]!;
      feeds.encoder_attention_mask = idsTensor(captioner_decoder.input('encoder_attention_mask').type, new Int32Array(n).fill(1), [1, n]);
    }
    await captioner_decoder.run(feeds);
  }
}
