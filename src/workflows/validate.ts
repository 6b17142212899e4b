/**
 * Create-body validation: parseCreateBody turns an untrusted JSON body into a normalized
 * prediction input (defaults filled, seed resolved) with its image count and cost, or into
 * the full list of problems found. It never throws.
 */
import { webcrypto } from 'node:crypto';
import {
  catalogue,
  isWorkflowName,
  LIMITS,
  type OutpaintingEntry,
  type QrV5Entry,
  type V5Model,
  type WorkflowEntry,
} from './catalogue.ts';
import { costCentsFor, imageCountFor, type CostInput } from './pricing.ts';
import { placementFor } from '../qr/control-image.ts';
import { encodedSize } from '../qr/encode.ts';
import { DEFAULT_QUIET_ZONE_MODULES, layoutQr, QrLayoutError, type Canvas, type Placement } from '../qr/layout.ts';
import { dedupe, describeValue, mapIssue, quote, type ValidationIssue } from './issue-messages.ts';
import { WORKFLOWS, type WorkflowName } from './names.ts';
import { schemaSetFor, type FieldKind, type SchemaSet } from './schemas.ts';
import { UNSTORABLE_TEXT } from '../util/storable-text.ts';
import { isAspectRatio, isResolution, outputSize } from './sizes.ts';

/** The zod request schemas (for OpenAPI / JSON Schema generation) are defined in schemas.ts. */
export { createBodySchema, requestSchemas } from './schemas.ts';

export type { ValidationIssue };

export interface ValidateOptions {
  /** Accept webhooks on literal loopback/private hosts, and http:// webhooks to internal hosts only (local development only). */
  allowPrivateUrls: boolean;
  /** Source of the seed when the body has none. Default: crypto-random integer in [0, 2^53-1]. */
  randomSeed?: () => number;
}

export interface ParsedPrediction {
  workflow: WorkflowName;
  /** Normalized echo of the request: workflow, accepted fields, defaults filled in, seed resolved. */
  input: Record<string, unknown>;
  /** Number of images the prediction produces (batchSize, or 1). */
  imageCount: number;
  /** Price in integer hundredths of a credit (2.49 credits = 249). */
  costCents: number;
}

export type ParseResult = { ok: true; value: ParsedPrediction } | { ok: false; issues: ValidationIssue[] };

const WORKFLOW_LIST = WORKFLOWS.join(', ');

/** Crypto-random integer, uniform in [0, 2^53 - 1]. */
export function cryptoRandomSeed(): number {
  const words = webcrypto.getRandomValues(new Uint32Array(2));
  return (words[0]! & 0x1fffff) * 0x100000000 + words[1]!;
}

/**
 * Validates a create-prediction body. Reports every problem found (not only the first).
 * `null` for a field is treated as if the field were absent.
 */
export function parseCreateBody(body: unknown, options: ValidateOptions): ParseResult {
  try {
    return parse(body, options);
  } catch {
    // Defensive: validation must never throw. Tests assert this branch is never taken.
    return { ok: false, issues: [{ field: '', rule: 'internal', message: 'the request body could not be validated' }] };
  }
}

function fail(field: string, rule: string, message: string): ParseResult {
  return { ok: false, issues: [{ field, rule, message }] };
}

function parse(body: unknown, options: ValidateOptions): ParseResult {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail('', 'type', `the request body must be a JSON object, got ${describeValue(body)}`);
  }
  const source = body as Record<string, unknown>;
  const workflow = ownValue(source, 'workflow');
  if (workflow === undefined || workflow === null) {
    return fail('workflow', 'required', `workflow is required; one of: ${WORKFLOW_LIST}`);
  }
  if (typeof workflow !== 'string') {
    return fail('workflow', 'type', `workflow must be a string, one of: ${WORKFLOW_LIST}`);
  }
  if (!isWorkflowName(workflow)) {
    return fail('workflow', 'unknown_workflow', `unknown workflow ${quote(workflow)}; allowed: ${WORKFLOW_LIST}`);
  }

  const entry = catalogue[workflow];
  const set = schemaSetFor({ allowPrivateUrls: options.allowPrivateUrls === true });
  const schema = set.schemas[workflow];
  const kinds = set.kinds[workflow];
  const fields = Object.keys(schema.shape);

  // Keep only the fields this workflow accepts (others are dropped, not stored); null = absent.
  const raw: Record<string, unknown> = {};
  for (const key of fields) {
    const value = ownValue(source, key);
    if (value !== undefined && value !== null) raw[key] = value;
  }

  const result = schema.safeParse(raw);
  const issues: ValidationIssue[] = result.success
    ? []
    : result.error.issues.map((i) => withOtherVersionHint(emptyAsRequired(mapIssue(i, raw, kinds), raw, schema, kinds), source, workflow, fields));
  const invalid = new Set(issues.map((i) => i.field));
  issues.push(...unstorableTextIssues(raw, invalid));
  issues.push(...crossFieldIssues(entry, raw, invalid));
  if (issues.length > 0 || !result.success) {
    return { ok: false, issues: dedupe(issues) };
  }

  const data = result.data as Record<string, unknown>;
  const input: Record<string, unknown> = {};
  for (const key of fields) {
    let value = data[key];
    if (key === 'seed' && value === undefined) value = resolveSeed(options);
    if (key === 'qrSteps' && typeof value === 'string') value = Number(value);
    if ((key === 'qrX' || key === 'qrY') && value === undefined && entry.family === 'qr-v5') {
      value = centredPosition(entry, data)[key];
    }
    if (value !== undefined) input[key] = value;
  }

  const costInput = input as CostInput;
  return {
    ok: true,
    value: {
      workflow,
      input,
      imageCount: imageCountFor(entry, costInput),
      costCents: costCentsFor(entry, costInput),
    },
  };
}

/**
 * Fields that carry the same thing in different versions: the prompt is qrText up to v4 and
 * prompt from v5 (and in outpainting); the code is an image URL (qrImage) up to v3b and its
 * content (qrContent) from v4. A body written for another version misses the one this
 * workflow needs while it carries the other, which is ignored here (rule 3 in workflows.md).
 */
const SAME_ROLE: readonly (readonly string[])[] = [
  ['qrText', 'prompt'],
  ['qrImage', 'qrContent'],
];

/** Fields whose value is a string: an empty one is no value. */
const STRING_KINDS: ReadonlySet<FieldKind> = new Set(['string', 'text', 'url', 'enum']);

/**
 * An empty string in a string field the workflow requires is `required` (workflows.md), whatever
 * other rule it breaks: `qrImage: ""` is missing, not a malformed URL; `type: ""` not a wrong enum
 * value. (In a number field it stays a wrong type.)
 */
function emptyAsRequired(
  issue: ValidationIssue,
  raw: Record<string, unknown>,
  schema: SchemaSet['schemas'][WorkflowName],
  kinds: Readonly<Record<string, FieldKind>>,
): ValidationIssue {
  const kind = kinds[issue.field];
  if (raw[issue.field] !== '' || kind === undefined || !STRING_KINDS.has(kind)) return issue;
  if (schema.shape[issue.field]?.safeParse(undefined).success !== false) return issue;
  return { field: issue.field, rule: 'required', message: `${issue.field} must not be empty` };
}

/** A `required` issue whose field the body sends under another version's name says so. */
function withOtherVersionHint(issue: ValidationIssue, source: Record<string, unknown>, workflow: string, fields: readonly string[]): ValidationIssue {
  if (issue.rule !== 'required' || ownValue(source, issue.field) !== undefined) return issue;
  const sent = SAME_ROLE.find((group) => group.includes(issue.field))?.find(
    (other) => other !== issue.field && !fields.includes(other) && ownValue(source, other) !== undefined,
  );
  if (sent === undefined) return issue;
  return { ...issue, message: `${issue.message}: ${workflow} reads ${issue.field}, not ${sent} (which it ignores)` };
}

function ownValue(obj: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

function resolveSeed(options: ValidateOptions): number {
  if (options.randomSeed) {
    try {
      const v = options.randomSeed();
      if (Number.isSafeInteger(v) && v >= LIMITS.seed.min && v <= LIMITS.seed.max) return v;
    } catch {
      // fall through to the crypto source
    }
  }
  return cryptoRandomSeed();
}

// ---------------------------------------------------------------------------
// v5 placement
// ---------------------------------------------------------------------------

interface V5Canvas {
  canvas: Canvas;
  placement: Placement;
  maxX: number;
  maxY: number;
}

/** Output size and the centred QR square for the given (valid) v5 values; qrX / qrY as sent. */
function v5Canvas(entry: QrV5Entry, values: Record<string, unknown>): V5Canvas {
  const aspectRatio = isAspectRatio(values.aspectRatio) ? values.aspectRatio : entry.enumDefaults.aspectRatio;
  const resolution = isResolution(values.resolution) ? values.resolution : entry.enumDefaults.resolution;
  const qrRatio = typeof values.qrRatio === 'number' ? values.qrRatio : entry.params.qrRatio.default;
  const canvas = outputSize(aspectRatio, resolution);
  const placement = placementFor(canvas, qrRatio);
  return { canvas, placement, maxX: canvas.width - placement.side, maxY: canvas.height - placement.side };
}

function centredPosition(entry: QrV5Entry, values: Record<string, unknown>): { qrX: number; qrY: number } {
  const { placement } = v5Canvas(entry, values);
  return { qrX: placement.x, qrY: placement.y };
}

/** String fields that passed their own checks but could not be stored in the input echo. */
function unstorableTextIssues(raw: Record<string, unknown>, invalid: Set<string>): ValidationIssue[] {
  return Object.entries(raw)
    .filter(([key, value]) => !invalid.has(key) && typeof value === 'string' && UNSTORABLE_TEXT.test(value))
    .map(([key]) => ({ field: key, rule: 'characters', message: `${key} must not contain U+0000 or an unpaired UTF-16 surrogate` }));
}

// ---------------------------------------------------------------------------
// Rules across fields (run only on fields that passed their own checks)
// ---------------------------------------------------------------------------

function crossFieldIssues(entry: WorkflowEntry, raw: Record<string, unknown>, invalid: Set<string>): ValidationIssue[] {
  if (entry.family === 'qr-v5') return v5CanvasIssues(entry, raw, invalid);
  if (entry.family === 'outpainting') return outpaintingIssues(entry, raw, invalid);
  return [];
}

function v5CanvasIssues(entry: QrV5Entry, raw: Record<string, unknown>, invalid: Set<string>): ValidationIssue[] {
  if (invalid.has('aspectRatio') || invalid.has('resolution') || invalid.has('qrRatio')) return [];
  const { canvas, placement, maxX, maxY } = v5Canvas(entry, raw);
  const issues: ValidationIssue[] = [];
  const where = `a ${canvas.width}x${canvas.height} output with a ${placement.side}px QR code`;
  for (const [key, max] of [['qrX', maxX], ['qrY', maxY]] as const) {
    const value = raw[key];
    if (invalid.has(key) || typeof value !== 'number') continue;
    if (value < 0 || value > max) {
      issues.push({
        field: key,
        rule: 'canvas_bounds',
        message: `${key} must be between 0 and ${max} for ${where}, so the code stays inside the image (got ${value})`,
      });
    }
  }
  if (!invalid.has('qrContent') && !invalid.has('model') && typeof raw.qrContent === 'string') {
    const problem = moduleFitProblem(entry, raw, canvas, placement);
    if (problem) issues.push({ field: 'qrRatio', rule: 'module_size', message: problem });
  }
  return issues;
}

/** The largest code (version 40) fits any square at least this many pixels wide with 1-pixel modules. */
const ALWAYS_FITS_SIDE = 177 + 2 * DEFAULT_QUIET_ZONE_MODULES;

/** Why the code cannot be drawn with whole-pixel modules in its square, or null. */
function moduleFitProblem(entry: QrV5Entry, raw: Record<string, unknown>, canvas: Canvas, placement: Placement): string | null {
  if (placement.side >= ALWAYS_FITS_SIDE) return null;
  const model = typeof raw.model === 'string' && raw.model in entry.controlByModel ? (raw.model as V5Model) : entry.enumDefaults.model;
  try {
    const size = encodedSize(raw.qrContent as string, entry.controlByModel[model].errorCorrectionLevel);
    layoutQr(canvas, { ...placement, x: 0, y: 0 }, size);
    return null;
  } catch (error) {
    if (error instanceof QrLayoutError) return error.message;
    return null; // capacity problems are reported on qrContent
  }
}

/**
 * The rules that involve several outpainting fields, each checked when the fields it reads
 * passed their own checks (a bad image_width does not hide all-zero paddings).
 */
function outpaintingIssues(entry: OutpaintingEntry, raw: Record<string, unknown>, invalid: Set<string>): ValidationIssue[] {
  type Key = 'image_width' | 'image_height' | 'padding_left' | 'padding_right' | 'padding_top' | 'padding_bottom';
  const valid = (...keys: Key[]): boolean => keys.every((k) => !invalid.has(k) && typeof raw[k] === 'number');
  const v = (k: Key): number => raw[k] as number;
  const issues: ValidationIssue[] = [];
  if (valid('padding_left', 'padding_right', 'padding_top', 'padding_bottom') && v('padding_left') + v('padding_right') + v('padding_top') + v('padding_bottom') <= 0) {
    issues.push({ field: '', rule: 'min_total', message: 'at least one of padding_left, padding_right, padding_top, padding_bottom must be greater than 0' });
  }
  const width = valid('image_width', 'padding_left', 'padding_right') ? v('image_width') + v('padding_left') + v('padding_right') : undefined;
  const height = valid('image_height', 'padding_top', 'padding_bottom') ? v('image_height') + v('padding_top') + v('padding_bottom') : undefined;
  const { maxSide, maxArea } = entry.params.canvas;
  const tooWide = width !== undefined && width > maxSide;
  const tooHigh = height !== undefined && height > maxSide;
  const tooLarge = width !== undefined && height !== undefined && width * height > maxArea;
  if (tooWide || tooHigh || tooLarge) {
    const size = `${width ?? '?'}x${height ?? '?'}`;
    issues.push({
      field: '',
      rule: 'canvas_bounds',
      message: `the outpainted canvas would be ${size}; each side must be at most ${maxSide} pixels and the area at most ${maxArea} pixels`,
    });
  }
  return issues;
}
