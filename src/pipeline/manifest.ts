/**
 * The model manifest (models/manifest.json): which ONNX graphs make up each model, how their
 * inputs and outputs are named, and which model, ControlNet and sampling defaults each workflow
 * uses. It is the one place an operator edits to point a workflow at real weights.
 *
 * Graph inputs/outputs are mapped by name (role → the export's name), never by position:
 * exporters name things differently (design notes §4). Paths are relative to the manifest's
 * folder. Objects are strict so a misspelt key fails at start instead of being ignored.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { z } from 'zod';
import { V5_MODELS, type V5Model } from '../workflows/catalogue.ts';
import { QR_WORKFLOWS, type QrWorkflowName, type WorkflowName } from '../workflows/names.ts';
import { SCHEDULER_NAMES, type SchedulerConfig, type SchedulerName } from './schedulers/index.ts';
import { nsfwProblems, NsfwSpecSchema } from './nsfw-manifest.ts';

export const MANIFEST_VERSION = 1;
/** SD1.5's VAE scaling factor. */
export const SD15_LATENT_SCALE = 0.18215;

export const GRAPH_ROLES = [
  'text_encoder',
  'denoiser',
  'unet',
  'controlnet',
  'vae_decoder',
  'vae_decoder_fp32',
  'vae_encoder',
  'unet_inpaint',
  'safety_checker',
  'content_filter',
  'nsfw_classifier',
  'captioner_encoder',
  'captioner_decoder',
  'face_detector',
] as const;
export type GraphRole = (typeof GRAPH_ROLES)[number];
export const REQUIRED_ROLES: readonly GraphRole[] = ['text_encoder', 'vae_decoder'];

const comment = z.string().optional();
const nameMap = z.record(z.string().min(1), z.string().min(1));

const GraphSpecSchema = z.strictObject({
  path: z.string().min(1),
  /** role → the graph's input name, only where the export differs from the conventional name. */
  inputs: nameMap.optional(),
  outputs: nameMap.optional(),
  comment,
});
export type GraphSpec = z.infer<typeof GraphSpecSchema>;

const SchedulerNameSchema = z.enum(SCHEDULER_NAMES as [SchedulerName, ...SchedulerName[]]);

const SchedulerConfigSchema = z
  .strictObject({
    numTrainTimesteps: z.number().int().positive(),
    betaStart: z.number().positive(),
    betaEnd: z.number().positive(),
    betaSchedule: z.enum(['scaled_linear', 'linear']),
    predictionType: z.enum(['epsilon', 'v_prediction']),
    timestepSpacing: z.enum(['leading', 'linspace', 'trailing']),
    stepsOffset: z.number().int().min(0),
    originalInferenceSteps: z.number().int().positive(),
    timestepScaling: z.number().positive(),
  })
  .partial();

const GraphsSchema = z
  .strictObject({
    text_encoder: GraphSpecSchema,
    /** UNet + ControlNet fused (qr-art models fuse): one call per step. Used instead of unet + controlnet when present. */
    denoiser: GraphSpecSchema.optional(),
    unet: GraphSpecSchema.optional(),
    controlnet: GraphSpecSchema.optional(),
    vae_decoder: GraphSpecSchema,
    /**
     * A float32 VAE decoder to decode again with when vae_decoder (an fp16 export) overflows to
     * NaN or Inf; without one such a decode fails the job (diffusion-parts.ts).
     */
    vae_decoder_fp32: GraphSpecSchema.optional(),
    vae_encoder: GraphSpecSchema.optional(),
    unet_inpaint: GraphSpecSchema.optional(),
    safety_checker: GraphSpecSchema.optional(),
    /** NSFW checkers other than SD's safety checker; nsfw.checker says which one runs (nsfw-manifest.ts). */
    content_filter: GraphSpecSchema.optional(),
    nsfw_classifier: GraphSpecSchema.optional(),
    captioner_encoder: GraphSpecSchema.optional(),
    captioner_decoder: GraphSpecSchema.optional(),
    /** UltraFace-contract face detector (face-detect.ts): enhance=face refines the faces it finds. */
    face_detector: GraphSpecSchema.optional(),
  })
  .refine((g) => g.denoiser !== undefined || (g.unet !== undefined && g.controlnet !== undefined), {
    message: 'a model needs a denoiser graph (UNet + ControlNet fused) or both unet and controlnet',
    path: ['denoiser'],
  });

const ModelSpecSchema = z.strictObject({
  comment,
  /** Declared precision of the UNet's float inputs; tensors always follow the graph's metadata. */
  dtype: z.enum(['fp32', 'fp16']),
  /** Side of the square the model was trained at; generation keeps about this many pixels. */
  nativeSize: z.number().int().min(64).max(4096),
  latentScale: z.number().positive().default(SD15_LATENT_SCALE),
  /** Generated sides are multiples of this (8 gives whole latents; 64 for exports that need latents divisible by 8). */
  sizeMultiple: z.number().int().positive().multipleOf(8).default(8),
  /** Folder with vocab.json + merges.txt (or tokenizer.json). */
  tokenizer: z.string().min(1),
  /**
   * CLIP skip: condition on the k-th text-encoder layer from the end (1: the last, as trained
   * by SD1.5; 2: the penultimate, as anime fine-tunes are). Above 1 the text encoder must output
   * its hidden states (clip-skip.ts).
   */
  clipSkip: z.number().int().min(1).max(12).default(1),
  scheduler: z.strictObject({ name: SchedulerNameSchema, config: SchedulerConfigSchema.default({}) }),
  /** Second pass for outputs larger than the generation size (see txt2img.ts). */
  refine: z
    .strictObject({
      strength: z.number().min(0).max(1).default(0.3),
      /** The refinement runs at the output size or, when larger, this many pixels (aspect kept). */
      maxPixels: z.number().int().min(64 * 64).default(1536 * 1536),
    })
    .default({ strength: 0.3, maxPixels: 1536 * 1536 }),
  graphs: GraphsSchema,
  /**
   * How the model's images are checked for NSFW content: by graphs.safety_checker (the default,
   * so that graph is required), graphs.content_filter or graphs.nsfw_classifier with the verdict
   * rule given here (nsfw-manifest.ts), or not at all, which the manifest must then say: `"checker": "none"`.
   */
  nsfw: NsfwSpecSchema,
  /** How graphs.face_detector's output is decoded (face-detect.ts; the defaults are UltraFace's demo values). */
  faceDetector: z
    .strictObject({
      /** A box is a face when its face probability (scores[..., 1]) is above this. */
      scoreThreshold: z.number().gt(0).lt(1).default(0.7),
      /** Hard NMS: a box overlapping a better one by more than this IoU is dropped. */
      iouThreshold: z.number().gt(0).max(1).default(0.5),
      /** At most this many faces per image are refined, largest first. */
      maxFaces: z.number().int().min(1).max(16).default(4),
      /** Input size when the graph leaves it symbolic (a fixed size in the graph wins). */
      inputWidth: z.number().int().min(16).max(4096).default(320),
      inputHeight: z.number().int().min(16).max(4096).default(240),
      comment,
    })
    .default({ scoreThreshold: 0.7, iouThreshold: 0.5, maxFaces: 4, inputWidth: 320, inputHeight: 240 }),
});
export type ModelSpec = z.infer<typeof ModelSpecSchema>;

const WorkflowSettingsObject = z.strictObject({
  comment,
  model: z.string().min(1),
  /** An entry of `controlnets`; the model's own graphs.controlnet when absent. */
  controlnet: z.string().min(1).optional(),
  /** The model's scheduler when absent. */
  scheduler: SchedulerNameSchema.optional(),
  /** Defaults for requests that carry no steps / cfg (v1-v4 carry no cfg; v4 no steps). */
  steps: z.number().int().min(1).max(200),
  guidance: z.number().min(0).max(30),
  /** Fractions of the schedule during which the ControlNet is applied (diffusers' control_guidance_start/end). */
  controlStart: z.number().min(0).max(1).default(0),
  controlEnd: z.number().min(0).max(1).default(1),
});
const controlWindow = { message: 'controlStart must be below controlEnd', path: ['controlStart'] };
const WorkflowSettingsSchema = WorkflowSettingsObject.refine((s) => s.controlStart < s.controlEnd, controlWindow);
export type WorkflowSettings = z.infer<typeof WorkflowSettingsSchema>;

/**
 * Outpainting (see src/pipeline/outpaint.ts and docs/outpainting.md): `steps` is the one_shot
 * step count; multi_shots runs `multiShots.steps` per pass and grows the border in passes of at
 * most `multiShots.passFraction` × nativeSize working pixels. The control window does not apply.
 */
const OutpaintingSettingsSchema = WorkflowSettingsObject.extend({
  multiShots: z
    .strictObject({
      steps: z.number().int().min(1).max(200).default(30),
      /** Largest extension of one pass, as a fraction of the model's native size. */
      passFraction: z.number().min(0.05).max(1).default(0.25),
      /** At least 2 (else it would be one_shot); the pass size grows when the border needs more. */
      maxPasses: z.number().int().min(2).max(16).default(6),
    })
    .default({ steps: 30, passFraction: 0.25, maxPasses: 6 }),
  /** Seam blend, in output pixels into the original image (the rest of it is kept byte for byte). */
  featherPixels: z.number().int().min(0).max(256).default(16),
  /** How far a pass repaints into the previous pass's ring (working pixels), so rings blend too. */
  overlapPixels: z.number().int().min(0).max(512).default(32),
  /** Largest canvas painted at full resolution; larger ones are painted at this area and upscaled. Default nativeSize². */
  maxPixels: z.number().int().min(64 * 64).optional(),
  /** Captioner: largest number of generated tokens, and beams (1 = greedy). Defaults: generation_config.json's, else 20 and 1. */
  captionMaxTokens: z.number().int().min(1).max(128).optional(),
  captionBeams: z.number().int().min(1).max(8).optional(),
}).refine((s) => s.controlStart < s.controlEnd, controlWindow);
export type OutpaintingSettings = z.infer<typeof OutpaintingSettingsSchema>;

const V5_WORKFLOWS = ['generate_qr_art_v5', 'generate_qr_art_v5s'] as const satisfies readonly QrWorkflowName[];
type V5WorkflowName = (typeof V5_WORKFLOWS)[number];
const isV5Workflow = (w: string): w is V5WorkflowName => (V5_WORKFLOWS as readonly string[]).includes(w);

const ByV5ModelSchema = z.strictObject(
  Object.fromEntries(V5_MODELS.map((m) => [m, WorkflowSettingsSchema])) as Record<V5Model, typeof WorkflowSettingsSchema>,
);

const WorkflowsSchema = z.strictObject({
  ...(Object.fromEntries(QR_WORKFLOWS.map((w) => [w, isV5Workflow(w) ? ByV5ModelSchema : WorkflowSettingsSchema])) as Record<
    Exclude<QrWorkflowName, V5WorkflowName>,
    typeof WorkflowSettingsSchema
  > &
    Record<V5WorkflowName, typeof ByV5ModelSchema>),
  outpainting: OutpaintingSettingsSchema.optional(),
});

const ManifestSchema = z.strictObject({
  comment,
  version: z.literal(MANIFEST_VERSION),
  models: z.record(z.string().min(1), ModelSpecSchema).refine((m) => Object.keys(m).length > 0, 'at least one model is needed'),
  /** Extra ControlNets (by id) that workflows may name instead of their model's own. */
  controlnets: z.record(z.string().min(1), GraphSpecSchema).default({}),
  workflows: WorkflowsSchema,
});

export type ManifestData = z.infer<typeof ManifestSchema>;

/** A loaded manifest: paths inside it are resolved against `dir`. */
export interface Manifest extends ManifestData {
  /** The manifest file as given to loadManifest. */
  readonly file: string;
  /** Its folder (absolute): relative paths inside are resolved against it. */
  readonly dir: string;
}

export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

/** A path as messages show it: relative to the working directory when inside it. */
export function displayPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/** Absolute path of a manifest-relative path. */
export function manifestPath(manifest: Pick<Manifest, 'dir'>, path: string): string {
  return resolve(manifest.dir, path);
}

/** Reads, parses and validates a manifest; every error names the file and the problem. */
export async function loadManifest(file: string): Promise<Manifest> {
  const shown = displayPath(resolve(file));
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ManifestError(`${shown}: cannot read the model manifest (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ManifestError(`${shown}: not valid JSON (${(err as Error).message})`);
  }
  return parseManifest(json, file);
}

/** Validates already parsed JSON (`file` names it in errors and anchors relative paths). */
export function parseManifest(json: unknown, file: string): Manifest {
  const shown = displayPath(resolve(file));
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(top level)'}: ${i.message}`);
    throw new ManifestError(`${shown}: invalid model manifest: ${problems.join('; ')}`);
  }
  const data = parsed.data;
  const problems: string[] = [];
  for (const [id, model] of Object.entries(data.models)) {
    problems.push(...nsfwProblems(id, model.nsfw, model.graphs));
    // The captioner is its two graphs together: one alone would be loaded and never run, and a prompt-less outpainting would fail.
    const [encoder, decoder] = [model.graphs.captioner_encoder, model.graphs.captioner_decoder];
    if (!encoder !== !decoder) {
      const [listed, missing] = encoder ? ['captioner_encoder', 'captioner_decoder'] : ['captioner_decoder', 'captioner_encoder'];
      problems.push(`models.${id}.graphs.${missing}: missing, but graphs.${listed} is listed; the captioner needs both (or neither: outpainting then needs a prompt)`);
    }
  }
  for (const [where, settings] of workflowEntries(data)) {
    if (!Object.hasOwn(data.models, settings.model)) {
      problems.push(`${where}.model: '${settings.model}' is not one of the models (${Object.keys(data.models).join(', ')})`);
    }
    if (settings.controlnet !== undefined && !Object.hasOwn(data.controlnets, settings.controlnet)) {
      problems.push(`${where}.controlnet: '${settings.controlnet}' is not one of the controlnets (${Object.keys(data.controlnets).join(', ') || 'none'})`);
    }
    if (settings.controlnet !== undefined && Object.hasOwn(data.models, settings.model) && !data.models[settings.model]!.graphs.unet) {
      problems.push(`${where}.controlnet: '${settings.controlnet}' runs with model '${settings.model}''s unet graph, which the model does not list`);
    }
  }
  if (problems.length > 0) throw new ManifestError(`${shown}: invalid model manifest: ${problems.join('; ')}`);
  return { ...data, file, dir: dirname(resolve(file)) };
}

/** Every workflow setting with its place in the file (for messages and for loading what is used). */
export function workflowEntries(data: Pick<ManifestData, 'workflows'>): [string, WorkflowSettings][] {
  const out: [string, WorkflowSettings][] = [];
  for (const [name, entry] of Object.entries(data.workflows)) {
    if (entry === undefined) continue;
    if ('model' in entry) out.push([`workflows.${name}`, entry as WorkflowSettings]);
    else for (const [m, s] of Object.entries(entry as Record<V5Model, WorkflowSettings>)) out.push([`workflows.${name}.${m}`, s]);
  }
  return out;
}

export interface ResolvedWorkflow {
  readonly modelId: string;
  readonly model: ModelSpec;
  /** The ControlNet's id in `controlnets`, or undefined for the model's own. */
  readonly controlnetId: string | undefined;
  readonly settings: WorkflowSettings;
  /** Effective scheduler name and config (model config; the workflow may change the sampler only). */
  readonly scheduler: SchedulerName;
  readonly schedulerConfig: Partial<SchedulerConfig>;
}

/** Which model, ControlNet and defaults a workflow (and, for v5/v5s, its `model` value) uses. */
export function resolveWorkflow(manifest: ManifestData, workflow: WorkflowName, v5Model?: V5Model): ResolvedWorkflow {
  const entry = manifest.workflows[workflow as keyof ManifestData['workflows']];
  if (entry === undefined) throw new ManifestError(`the model manifest has no entry for workflow ${workflow}`);
  let settings: WorkflowSettings;
  if ('model' in entry) settings = entry as WorkflowSettings;
  else {
    if (v5Model === undefined) throw new RangeError(`${workflow} needs a model value (${V5_MODELS.join(', ')})`);
    settings = (entry as Record<V5Model, WorkflowSettings>)[v5Model];
  }
  const model = manifest.models[settings.model]!;
  return {
    modelId: settings.model,
    model,
    controlnetId: settings.controlnet,
    settings,
    scheduler: settings.scheduler ?? model.scheduler.name,
    schedulerConfig: model.scheduler.config,
  };
}

export interface ResolvedOutpainting {
  readonly modelId: string;
  readonly model: ModelSpec;
  readonly settings: OutpaintingSettings;
  readonly scheduler: SchedulerName;
  readonly schedulerConfig: Partial<SchedulerConfig>;
}

/** The model and outpainting defaults of workflows.outpainting. */
export function resolveOutpainting(manifest: ManifestData): ResolvedOutpainting {
  const settings = manifest.workflows.outpainting;
  if (settings === undefined) throw new ManifestError('the model manifest has no entry for workflow outpainting');
  const model = manifest.models[settings.model]!;
  return {
    modelId: settings.model,
    model,
    settings,
    scheduler: settings.scheduler ?? model.scheduler.name,
    schedulerConfig: model.scheduler.config,
  };
}
