/**
 * The workflow catalogue: one entry per workflow name with its family, NATS subject token,
 * description, parameter ranges, defaults and cost rules.
 *
 * Every number that governs validation or pricing (ranges, defaults, costs, text/URL limits)
 * lives in this file, so a maintainer edits one place; pricing.ts computes a prediction's cost
 * from the cost rules here. The output-size table is in sizes.ts
 * (spec 4.1.3), the preset names in presets.ts (spec 4.4), and the pattern names and qrRepair
 * levels with the QR layer that draws and repairs them (qr/patterns.ts, qr/repair-modes.ts;
 * re-exported here). docs/workflows.md documents the same numbers for clients; keep them in step.
 */
import type { ControlBackground } from '../qr/control-image.ts';
import type { ErrorCorrectionLevel } from '../qr/encode.ts';
import type { QrCodePattern } from '../qr/patterns.ts';
import type { QrRepairMode } from '../qr/repair-modes.ts';
import { isWorkflowName, type WorkflowName } from './names.ts';
import { MAX_OUTPUT_AREA, MAX_OUTPUT_SIDE, type AspectRatio, type Resolution } from './sizes.ts';

export type WorkflowFamily = 'qr-image' | 'qr-content' | 'qr-v5' | 'outpainting';

/** Inclusive numeric range. `integer` tells whether fractional values are rejected. */
export interface NumericRange {
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
}

export interface RangeWithDefault extends NumericRange {
  readonly default: number;
}

// ---------------------------------------------------------------------------
// Limits shared by every workflow
// ---------------------------------------------------------------------------

export const LIMITS = Object.freeze({
  /** seed: 0 .. 2^53-1 (spec 4.1.1, 4.1.2, 4.3, 8); random when absent. */
  seed: Object.freeze({ min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) satisfies NumericRange,
  /** Maximum length (UTF-16 code units) of qrText, prompt and negativePrompt. Our decision; the spec gives none. */
  textMaxLength: 2000,
  /** Maximum length of any URL field (qrImage, image, webhook). */
  urlMaxLength: 2048,
  /** QR error-correction level used for the qrContent capacity check (the generator encodes at H). */
  qrErrorCorrectionLevel: 'H' as const,
  /**
   * Capacity of the largest QR code (version 40) at level H, per encoding mode. Not a policy
   * knob: it is what the QR standard allows. Used to skip the encoder for hopeless inputs and
   * in messages; the real check encodes the text with the qrcode package.
   */
  qrCapacityAtH: Object.freeze({ numeric: 3057, alphanumeric: 1852, byte: 1273 }),
});

// ---------------------------------------------------------------------------
// Enumerations of the v5 and outpainting bodies (non-numeric, kept here with the rest)
// ---------------------------------------------------------------------------

export const V5_MODELS = ['universal', 'niji', 'dream', 'real'] as const;
export type V5Model = (typeof V5_MODELS)[number];

export const ENHANCE_VALUES = ['face'] as const;
export type EnhanceValue = (typeof ENHANCE_VALUES)[number];

/** Values of qrCodePartern (the field name is spelled as in the spec): the QR layer's 18 patterns. */
export { QR_CODE_PATTERNS, type QrCodePattern } from '../qr/patterns.ts';

/** Values of qrRepair: the QR layer's repair levels (docs/scan-repair.md). */
export { isQrRepairMode, QR_REPAIR_MODES, type QrRepairMode } from '../qr/repair-modes.ts';

export const OUTPAINTING_TYPES = ['one_shot', 'multi_shots'] as const;
export type OutpaintingType = (typeof OUTPAINTING_TYPES)[number];

// ---------------------------------------------------------------------------
// Cost rules. All amounts are integer cents: hundredths of a credit (2.49 credits = 249).
// ---------------------------------------------------------------------------

/** A fixed price per prediction (one image). */
export interface FlatCost {
  readonly kind: 'flat';
  readonly cents: number;
}

/** A price per image; multiplied by batchSize. */
export interface PerImageCost {
  readonly kind: 'per_image';
  readonly centsPerImage: number;
}

/**
 * v5 pricing: centsPerImage at SD, multiplied by the resolution factor (percent) and rounded
 * half up to a whole cent, plus enhanceFaceCentsPerImage when enhance = face; all multiplied
 * by batchSize.
 */
export interface PerImageByResolutionCost {
  readonly kind: 'per_image_by_resolution';
  readonly centsPerImage: number;
  readonly resolutionFactorPercent: Readonly<Record<Resolution, number>>;
  readonly enhanceFaceCentsPerImage: number;
}

/** Outpainting: a fixed price that depends on `type`. */
export interface ByTypeCost {
  readonly kind: 'by_type';
  readonly cents: Readonly<Record<OutpaintingType, number>>;
}

export type CostRule = FlatCost | PerImageCost | PerImageByResolutionCost | ByTypeCost;

// ---------------------------------------------------------------------------
// Control images: how the worker draws the code a model is conditioned on
// ---------------------------------------------------------------------------

/**
 * Per model: the background QR ControlNets of that kind were trained with (design.md
 * section 4: QR Code Monster v2 style models want #808080 outside the code, brightness /
 * pattern ControlNets want plain black on white) and the error-correction level (H: the
 * art may damage up to ~30% of the codewords and the code still reads).
 */
export interface QrControlSettings {
  readonly background: ControlBackground;
  readonly errorCorrectionLevel: ErrorCorrectionLevel;
}

/** Workflows without aspectRatio / resolution render at the models' native square size. */
export const NATIVE_CANVAS = Object.freeze({ width: 768, height: 768 });

const MONSTER_STYLE: QrControlSettings = Object.freeze({ background: 'gray', errorCorrectionLevel: 'H' });
const BLACK_ON_WHITE: QrControlSettings = Object.freeze({ background: 'white', errorCorrectionLevel: 'H' });

// ---------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------

interface EntryBase<F extends WorkflowFamily> {
  readonly name: WorkflowName;
  readonly family: F;
  /** NATS-safe token derived from the name: only [A-Za-z0-9_-] (no dots, spaces or wildcards). */
  readonly subjectToken: string;
  /** Version label of spec section 9 ('1', '1.1', ..., '5s'; 'outpainting'). */
  readonly version: string;
  readonly description: string;
  /**
   * Static defaults filled into the normalized input when a field is absent. Dynamic
   * defaults (a random seed, the centred qrX / qrY of v5) are not listed here.
   */
  readonly defaults: Readonly<Record<string, string | number>>;
}

/** What every QR workflow has. */
interface QrEntryBase<F extends WorkflowFamily> extends EntryBase<F> {
  /** qrRepair when the request has none. Not filled into the input echo: absent means this. */
  readonly qrRepair: QrRepairMode;
}

/** v1, v1.1, v2, v3a, v3b: the client supplies a QR image URL in qrImage. */
export interface QrImageEntry extends QrEntryBase<'qr-image'> {
  readonly params: {
    readonly qrStrength: RangeWithDefault;
    readonly qrSteps: RangeWithDefault;
  };
  /** The client's image is letterboxed onto this canvas (white) before use. */
  readonly control: { readonly canvas: { readonly width: number; readonly height: number } };
  readonly cost: FlatCost;
}

/** v4, v4s, v4real, v4niji, v4dream: the service encodes qrContent. */
export interface QrContentEntry extends QrEntryBase<'qr-content'> {
  readonly params: {
    readonly qrStrength: RangeWithDefault;
    /** null: the workflow does not accept qrSteps (v4); a sent value is dropped. */
    readonly qrSteps: RangeWithDefault | null;
    readonly batchSize: RangeWithDefault;
  };
  /** v4 bodies carry no layout fields: the code is centred at qrRatio on the native canvas, pattern s1. */
  readonly control: QrControlSettings & {
    readonly canvas: { readonly width: number; readonly height: number };
    readonly qrRatio: number;
    readonly pattern: QrCodePattern;
  };
  readonly cost: PerImageCost;
}

/** v5, v5s. */
export interface QrV5Entry extends QrEntryBase<'qr-v5'> {
  readonly params: {
    /** What a request may send (and what the input echo keeps); the sampler runs `sampling.steps`. */
    readonly steps: RangeWithDefault;
    /** What a request may send (and what the input echo keeps); the sampler runs `sampling.cfg`. */
    readonly cfg: RangeWithDefault;
    readonly qrStrength: RangeWithDefault;
    readonly batchSize: RangeWithDefault;
    /** Side of the QR code as a fraction of the output's short side. */
    readonly qrRatio: RangeWithDefault;
  };
  readonly enumDefaults: {
    readonly model: V5Model;
    readonly aspectRatio: AspectRatio;
    readonly resolution: Resolution;
    readonly qrCodePartern: QrCodePattern;
  };
  readonly controlByModel: Readonly<Record<V5Model, QrControlSettings>>;
  /**
   * The steps and guidance the sampler runs: a request's steps and cfg are clamped into these
   * (samplingFor). v5: its accepted ranges. v5s: its few-step tier, narrower than what it accepts,
   * because clients send one body to v5 and v5s alike.
   */
  readonly sampling: { readonly steps: NumericRange; readonly cfg: NumericRange };
  readonly cost: PerImageByResolutionCost;
}

export interface OutpaintingEntry extends EntryBase<'outpainting'> {
  readonly params: {
    readonly imageWidth: NumericRange;
    readonly imageHeight: NumericRange;
    /** Range of each of padding_left / right / top / bottom, in pixels. */
    readonly padding: NumericRange;
    /** The outpainted canvas: each side at most maxSide, area at most maxArea (the largest output of spec 4.1.3). */
    readonly canvas: { readonly maxSide: number; readonly maxArea: number };
  };
  readonly cost: ByTypeCost;
}

export type WorkflowEntry = QrImageEntry | QrContentEntry | QrV5Entry | OutpaintingEntry;

// ---------------------------------------------------------------------------
// The numbers
// ---------------------------------------------------------------------------

const range = (min: number, max: number, dflt: number, integer: boolean): RangeWithDefault =>
  Object.freeze({ min, max, default: dflt, integer });

/** qrStrength is a float 0..3 everywhere (spec 4.1.1, 8). */
const QR_STRENGTH_MIN = 0;
const QR_STRENGTH_MAX = 3;

/** v1..v3b. */
const V1_QR_STRENGTH = range(QR_STRENGTH_MIN, QR_STRENGTH_MAX, 0.85, false);
const V1_QR_STEPS = range(10, 20, 16, true);

/** v4 family. */
const V4_QR_STRENGTH = range(QR_STRENGTH_MIN, QR_STRENGTH_MAX, 1.5, false);
const V4_QR_STEPS = range(10, 60, 20, true); // v4s (spec); v4real/v4niji/v4dream (our decision: their examples send 20)
const BATCH_SIZE = range(1, 4, 1, true); // "up to 4 outputs per operation" (v4 and later)
/** v4 family: side of the code (with its quiet zone) on the native canvas; not a request field. */
const V4_QR_RATIO = 0.8;

/** v5 family (spec gives no ranges; these are our decisions, see docs/workflows.md). */
const V5_QR_RATIO = range(0.3, 1.0, 0.6, false);
const V5_STEPS = range(10, 60, 30, true);
const V5_CFG = range(1, 20, 7, false);
/**
 * What v5s's few-step LCM-style sampler runs well: 4 to 12 steps, guidance 1 to 3 (more steps
 * barely change an LCM image, and guidance above ~3 burns it).
 */
const V5S_SAMPLING = Object.freeze({
  steps: Object.freeze({ min: 4, max: 12, integer: true }) satisfies NumericRange,
  cfg: Object.freeze({ min: 1, max: 3, integer: false }) satisfies NumericRange,
});
/**
 * v5s accepts everything v5 accepts (clients send one body to both), and the smaller values of
 * its own tier it always accepted; the defaults stay the tier's. Values above the tier's are
 * clamped into V5S_SAMPLING when the job runs; the price does not depend on them.
 */
const V5S_STEPS = range(V5S_SAMPLING.steps.min, V5_STEPS.max, 8, true);
/**
 * Default cfg 1: the tier's models are LCM-LoRA fine-tunes, where cfg > 1 turns classifier-free
 * guidance on and doubles every UNet call (two rows per image) for little gain; at 1 there is one
 * row. (A full LCM checkpoint takes cfg into its guidance embedding and never doubles: docs/models.md §2.7.)
 */
const V5S_CFG = range(V5S_SAMPLING.cfg.min, V5_CFG.max, 1, false);
/** The photorealistic model pairs with a black-on-white ControlNet; the others are Monster-style. */
const V5_CONTROL_BY_MODEL: Readonly<Record<V5Model, QrControlSettings>> = Object.freeze({
  universal: MONSTER_STYLE,
  niji: MONSTER_STYLE,
  dream: MONSTER_STYLE,
  real: BLACK_ON_WHITE,
});

/**
 * qrRepair defaults. v4 and later render the code themselves, so the worker knows where every
 * module is and can repair a generation that would not scan. v1-v3b condition on the client's
 * own code image: the worker locates its modules (src/qr/locate.ts) and places them on the
 * canvas's pixel grid, so those generations are repaired the same way; a client code that cannot
 * be located (rotated, in perspective: a photo) leaves its images only checked
 * (docs/scan-repair.md).
 */
const CLIENT_IMAGE_QR_REPAIR: QrRepairMode = 'on_failure';
const RENDERED_QR_REPAIR: QrRepairMode = 'on_failure';

/** Resolution price factors of v5 / v5s, in percent of the SD price. */
const V5_RESOLUTION_FACTOR_PERCENT: Readonly<Record<Resolution, number>> = Object.freeze({
  SD: 100,
  HD: 150,
  FullHD: 200,
  UltraHD: 400,
});
const ENHANCE_FACE_CENTS_PER_IMAGE = 50;

/** Outpainting bounds (spec gives none; our decisions). */
const OUTPAINTING_IMAGE_SIDE: NumericRange = Object.freeze({ min: 64, max: 2048, integer: true });
const OUTPAINTING_PADDING: NumericRange = Object.freeze({ min: 0, max: 2048, integer: true });

/** Turns a workflow name into a NATS subject token: anything outside [A-Za-z0-9_-] becomes '_'. */
export function subjectTokenFor(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
}

function qrImageEntry(name: WorkflowName, version: string, cents: number, description: string): QrImageEntry {
  const params = { qrStrength: V1_QR_STRENGTH, qrSteps: V1_QR_STEPS };
  return {
    name,
    family: 'qr-image',
    subjectToken: subjectTokenFor(name),
    version,
    description,
    params,
    control: Object.freeze({ canvas: NATIVE_CANVAS }),
    qrRepair: CLIENT_IMAGE_QR_REPAIR,
    defaults: Object.freeze({ qrStrength: params.qrStrength.default, qrSteps: params.qrSteps.default }),
    cost: Object.freeze({ kind: 'flat', cents }),
  };
}

function qrContentEntry(
  name: WorkflowName,
  version: string,
  centsPerImage: number,
  qrSteps: RangeWithDefault | null,
  controlSettings: QrControlSettings,
  description: string,
): QrContentEntry {
  const params = { qrStrength: V4_QR_STRENGTH, qrSteps, batchSize: BATCH_SIZE };
  const defaults: Record<string, number> = { qrStrength: params.qrStrength.default };
  if (qrSteps) defaults.qrSteps = qrSteps.default;
  defaults.batchSize = params.batchSize.default;
  return {
    name,
    family: 'qr-content',
    subjectToken: subjectTokenFor(name),
    version,
    description,
    params,
    control: Object.freeze({ ...controlSettings, canvas: NATIVE_CANVAS, qrRatio: V4_QR_RATIO, pattern: 's1' }),
    qrRepair: RENDERED_QR_REPAIR,
    defaults: Object.freeze(defaults),
    cost: Object.freeze({ kind: 'per_image', centsPerImage }),
  };
}

function qrV5Entry(
  name: WorkflowName,
  version: string,
  centsPerImage: number,
  numbers: { steps: RangeWithDefault; cfg: RangeWithDefault; qrStrength: RangeWithDefault },
  sampling: QrV5Entry['sampling'],
  description: string,
): QrV5Entry {
  const params = { ...numbers, batchSize: BATCH_SIZE, qrRatio: V5_QR_RATIO };
  const enumDefaults = {
    model: 'universal',
    aspectRatio: '1:1',
    resolution: 'SD',
    qrCodePartern: 's1',
  } as const;
  return {
    name,
    family: 'qr-v5',
    subjectToken: subjectTokenFor(name),
    version,
    description,
    params,
    enumDefaults,
    controlByModel: V5_CONTROL_BY_MODEL,
    sampling,
    qrRepair: RENDERED_QR_REPAIR,
    defaults: Object.freeze({
      steps: params.steps.default,
      qrStrength: params.qrStrength.default,
      cfg: params.cfg.default,
      model: enumDefaults.model,
      batchSize: params.batchSize.default,
      aspectRatio: enumDefaults.aspectRatio,
      resolution: enumDefaults.resolution,
      qrCodePartern: enumDefaults.qrCodePartern,
      qrRatio: params.qrRatio.default,
    }),
    cost: Object.freeze({
      kind: 'per_image_by_resolution',
      centsPerImage,
      resolutionFactorPercent: V5_RESOLUTION_FACTOR_PERCENT,
      enhanceFaceCentsPerImage: ENHANCE_FACE_CENTS_PER_IMAGE,
    }),
  };
}

const outpaintingEntry: OutpaintingEntry = {
  name: 'outpainting',
  family: 'outpainting',
  subjectToken: subjectTokenFor('outpainting'),
  version: 'outpainting',
  description:
    'Extends an existing image beyond its borders by the given paddings; the prompt is optional (the worker captions the image when absent).',
  params: {
    imageWidth: OUTPAINTING_IMAGE_SIDE,
    imageHeight: OUTPAINTING_IMAGE_SIDE,
    padding: OUTPAINTING_PADDING,
    canvas: Object.freeze({ maxSide: MAX_OUTPUT_SIDE, maxArea: MAX_OUTPUT_AREA }),
  },
  defaults: Object.freeze({}),
  cost: Object.freeze({ kind: 'by_type', cents: Object.freeze({ one_shot: 200, multi_shots: 400 }) }),
};

const entries: readonly WorkflowEntry[] = [
  qrImageEntry('generate_qr_art', '1', 100, 'QR Art v1: artistic QR code from a prompt and a client-supplied QR image.'),
  qrImageEntry('generate_qr_art_v1.1', '1.1', 100, 'QR Art v1.1: artistic QR code from a prompt and a client-supplied QR image.'),
  qrImageEntry('generate_qr_art_v2', '2', 150, 'QR Art v2: artistic QR code from a prompt and a client-supplied QR image.'),
  qrImageEntry('generate_qr_art_v3a', '3a', 200, 'QR Art v3a: artistic QR code from a prompt and a client-supplied QR image.'),
  qrImageEntry('generate_qr_art_v3b', '3b', 200, 'QR Art v3b: artistic QR code from a prompt and a client-supplied QR image.'),
  qrContentEntry('generate_qr_art_v4', '4', 249, null, MONSTER_STYLE,
    'QR Art v4: the service encodes qrContent; tuned for the best results at a fixed cost; no steps parameter.'),
  qrContentEntry('generate_qr_art_v4s', '4s', 100, V4_QR_STEPS, MONSTER_STYLE,
    'QR Art v4s: the service encodes qrContent; tuned for speed and lower cost.'),
  qrContentEntry('generate_qr_art_v4real', '4real', 249, V4_QR_STEPS, BLACK_ON_WHITE,
    'QR Art v4real: as v4, tuned for a photorealistic style.'),
  qrContentEntry('generate_qr_art_v4niji', '4niji', 249, V4_QR_STEPS, MONSTER_STYLE,
    'QR Art v4niji: as v4, tuned for an anime style.'),
  qrContentEntry('generate_qr_art_v4dream', '4dream', 249, V4_QR_STEPS, MONSTER_STYLE,
    'QR Art v4dream: as v4, tuned for photorealism without losing range.'),
  qrV5Entry('generate_qr_art_v5', '5', 299,
    { steps: V5_STEPS, cfg: V5_CFG, qrStrength: range(QR_STRENGTH_MIN, QR_STRENGTH_MAX, 1.3, false) },
    { steps: V5_STEPS, cfg: V5_CFG },
    'QR Art v5: prompt + qrContent with model, aspect ratio, resolution, QR pattern, placement and presets.'),
  qrV5Entry('generate_qr_art_v5s', '5s', 149,
    { steps: V5S_STEPS, cfg: V5S_CFG, qrStrength: range(QR_STRENGTH_MIN, QR_STRENGTH_MAX, 1.3, false) },
    V5S_SAMPLING,
    'QR Art v5s: the fast, cheaper tier of v5 (few-step, LCM-style sampling: fewer steps, low cfg); accepts a v5 body and runs it at most 12 steps, cfg at most 3.'),
  outpaintingEntry,
];

export const catalogue: Readonly<Record<WorkflowName, WorkflowEntry>> = Object.freeze(
  Object.fromEntries(entries.map((e) => [e.name, Object.freeze(e)])) as Record<WorkflowName, WorkflowEntry>,
);

export { isWorkflowName };

/** The catalogue entry for a subject token (the inverse of subjectToken), or undefined. */
export function workflowForSubjectToken(token: string): WorkflowEntry | undefined {
  return entries.find((e) => e.subjectToken === token);
}

/**
 * The steps and guidance a v5 / v5s job samples with, from the steps and cfg of its input:
 * each clamped into the workflow's sampling range (v5: unchanged; v5s: steps above 12 run as 12,
 * cfg above 3 runs as 3). Identity inside the range, so a v5s body that was valid before runs as
 * before, and monotone, so asking for more never runs less.
 */
export function samplingFor(entry: QrV5Entry, asked: { steps: number; cfg: number }): { steps: number; cfg: number } {
  const clamp = (value: number, r: NumericRange) => Math.min(r.max, Math.max(r.min, value));
  return { steps: clamp(asked.steps, entry.sampling.steps), cfg: clamp(asked.cfg, entry.sampling.cfg) };
}
