/**
 * zod 4 request-body schemas, one shape per workflow family, built from the catalogue numbers.
 *
 * These schemas check each field on its own (type, range, enum, URL form, QR capacity).
 * Rules that relate several fields (v5 qrX/qrY inside the canvas, outpainting paddings and
 * canvas size) and the dynamic defaults (random seed, centred qrX/qrY) are applied by
 * parseCreateBody in validate.ts, which is the validator the API uses.
 *
 * The schemas avoid transforms, so `z.toJSONSchema(schema, { io: 'input' })` works on each of
 * them (for OpenAPI generation). Custom checks (refinements) do not appear in JSON Schema.
 */
import QRCode from 'qrcode';
import { z } from 'zod';
import {
  catalogue,
  ENHANCE_VALUES,
  LIMITS,
  OUTPAINTING_TYPES,
  QR_CODE_PATTERNS,
  QR_REPAIR_MODES,
  V5_MODELS,
  type NumericRange,
  type OutpaintingEntry,
  type QrContentEntry,
  type QrImageEntry,
  type QrV5Entry,
  type RangeWithDefault,
  type WorkflowEntry,
} from './catalogue.ts';
import { WORKFLOWS, type WorkflowName } from './names.ts';
import { PRESETS } from './presets.ts';
import { ASPECT_RATIOS, MAX_OUTPUT_SIDE, RESOLUTIONS } from './sizes.ts';
import { checkUrl } from './urls.ts';
import { UNSTORABLE_TEXT } from '../util/storable-text.ts';

export interface SchemaOptions {
  /** Accept webhooks on literal private/loopback hosts, and http webhooks to internal hosts (local development). */
  allowPrivateUrls: boolean;
}

/** How a field's type errors are worded. */
export type FieldKind = 'string' | 'text' | 'url' | 'integer' | 'number' | 'enum' | 'digits-or-integer' | 'literal';

/** Largest qrContent that could possibly fit (numeric mode); longer strings skip the encoder. */
const QR_MAX_CHARS_ANY_MODE = LIMITS.qrCapacityAtH.numeric;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when `text` can be encoded as a QR code at error-correction level H. */
export function fitsInQrCode(text: string): { ok: true } | { ok: false; reason: string } {
  if (text.length === 0) return { ok: false, reason: 'empty' };
  if (text.length > QR_MAX_CHARS_ANY_MODE) {
    return { ok: false, reason: 'The amount of data is too big to be stored in a QR Code' };
  }
  // Any text fits in byte mode when its UTF-8 form is within the byte capacity; only
  // longer text needs the encoder's exact (and much slower) segment optimisation.
  if (!LONE_SURROGATE.test(text) && Buffer.byteLength(text, 'utf8') <= LIMITS.qrCapacityAtH.byte) return { ok: true };
  try {
    QRCode.create(text, { errorCorrectionLevel: LIMITS.qrErrorCorrectionLevel });
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

// ---------------------------------------------------------------------------
// Field builders
// ---------------------------------------------------------------------------

function numberInRange(r: NumericRange) {
  return (r.integer ? z.int() : z.number()).min(r.min).max(r.max);
}

function numberWithDefault(r: RangeWithDefault, description: string) {
  return numberInRange(r).default(r.default).meta({ description });
}

/** Required free text (qrText, prompt): non-empty, not blank, at most LIMITS.textMaxLength. */
function requiredText(description: string) {
  return z
    .string()
    .min(1)
    .max(LIMITS.textMaxLength)
    .superRefine((s, ctx) => {
      if (s.length > 0 && s.trim().length === 0) {
        ctx.addIssue({ code: 'custom', message: 'must not be blank', params: { rule: 'required' }, input: s });
      }
    })
    .meta({ description });
}

function optionalText(description: string) {
  return z.string().max(LIMITS.textMaxLength).optional().meta({ description });
}

/** The `public_host` issue of every URL field: one rule, one wording. */
function privateHostIssue(host: string, input: string) {
  return { code: 'custom' as const, message: `must not point at a loopback, private or link-local host (${host})`, params: { rule: 'public_host' }, input };
}

/** Refused here rather than by the fetcher or the webhook sender later, and never stored in the prediction's input. */
function credentialsIssue(input: string) {
  return { code: 'custom' as const, message: 'must not contain credentials (user:password@)', params: { rule: 'no_credentials' }, input };
}

/**
 * An absolute http(s) URL of an input image. A host that is literally loopback or private is
 * refused here, as a webhook's is: the worker's fetcher would refuse it anyway (and it still checks
 * what a name resolves to), but only after the prediction was charged, queued and refunded.
 */
function imageUrl(description: string, options: SchemaOptions) {
  return z
    .string()
    .max(LIMITS.urlMaxLength)
    .superRefine((s, ctx) => {
      if (s.length > LIMITS.urlMaxLength) return; // reported by max()
      const problem = checkUrl(s, ['http:', 'https:'], !options.allowPrivateUrls);
      if (problem?.kind === 'private_host') {
        ctx.addIssue(privateHostIssue(problem.host, s));
      } else if (problem?.kind === 'credentials') {
        ctx.addIssue(credentialsIssue(s));
      } else if (problem) {
        ctx.addIssue({ code: 'custom', message: 'must be an absolute http or https URL', params: { rule: 'url' }, input: s });
      }
    })
    .meta({ description, format: 'uri' });
}

function webhookUrl(options: SchemaOptions) {
  const protocols = options.allowPrivateUrls ? ['https:', 'http:'] : ['https:'];
  return z
    .string()
    .max(LIMITS.urlMaxLength)
    .superRefine((s, ctx) => {
      if (s.length > LIMITS.urlMaxLength) return;
      const problem = checkUrl(s, protocols, !options.allowPrivateUrls, { httpOnlyToInternalHosts: true });
      if (!problem) return;
      if (problem.kind === 'public_http') {
        ctx.addIssue({
          code: 'custom',
          message: `must use https: plain http is accepted only to a loopback, private or internal host (ALLOW_PRIVATE_URLS is for development), and ${problem.host} is public`,
          params: { rule: 'https_url' },
          input: s,
        });
      } else if (problem.kind === 'private_host') {
        ctx.addIssue(privateHostIssue(problem.host, s));
      } else if (problem.kind === 'credentials') {
        ctx.addIssue(credentialsIssue(s));
      } else {
        ctx.addIssue({
          code: 'custom',
          message: options.allowPrivateUrls ? 'must be an absolute https or http URL' : 'must be an absolute https URL',
          params: { rule: 'https_url' },
          input: s,
        });
      }
    })
    .optional()
    .meta({ description: 'HTTPS URL called with the prediction when it has new output (spec section 6).', format: 'uri' });
}

function qrContent() {
  return z
    .string()
    .min(1)
    .superRefine((s, ctx) => {
      if (s.length === 0) return; // reported by min()
      // The encoder writes it, ZXing-C++ returns it, and ZBar, jsQR, Java ZXing and phones drop
      // it: no scan would ever match the content, so isScanables could never be true.
      if (s.startsWith('\uFEFF')) {
        ctx.addIssue({ code: 'custom', message: 'starts with U+FEFF (a byte-order mark), which most decoders drop, so a scan never matches; remove it', params: { rule: 'characters' }, input: s });
        return;
      }
      // The encoder cannot write these either: said as what they are, not as content too long.
      if (UNSTORABLE_TEXT.test(s)) {
        ctx.addIssue({ code: 'custom', message: 'must not contain U+0000 or an unpaired UTF-16 surrogate', params: { rule: 'characters' }, input: s });
        return;
      }
      const fit = fitsInQrCode(s);
      if (!fit.ok) {
        ctx.addIssue({
          code: 'custom',
          message: `does not fit in a QR code at error-correction level ${LIMITS.qrErrorCorrectionLevel} (${fit.reason}); at most ${LIMITS.qrCapacityAtH.numeric} digits, ${LIMITS.qrCapacityAtH.alphanumeric} upper-case alphanumerics or ${LIMITS.qrCapacityAtH.byte} bytes of UTF-8`,
          params: { rule: 'qr_capacity' },
          input: s,
        });
      }
    })
    .meta({ description: 'Content encoded in the QR code (link, text, phone, e-mail, ...); must fit a QR code at error-correction level H.' });
}

/**
 * qrSteps: an integer; a string of decimal digits is also accepted (earlier releases sent a
 * string) and normalized to an integer by parseCreateBody.
 */
function qrSteps(r: RangeWithDefault) {
  const digits = z
    .string()
    .regex(/^[0-9]+$/)
    .superRefine((s, ctx) => {
      if (!/^[0-9]+$/.test(s)) return; // reported by regex()
      const n = Number(s);
      if (n < r.min) ctx.addIssue({ code: 'too_small', origin: 'number', minimum: r.min, inclusive: true, input: s, message: '' });
      if (n > r.max) ctx.addIssue({ code: 'too_big', origin: 'number', maximum: r.max, inclusive: true, input: s, message: '' });
    });
  return z
    .union([numberInRange(r), digits])
    .default(r.default)
    .meta({ description: `Sampling steps, integer ${r.min}..${r.max} (a string of digits is accepted for backwards compatibility).` });
}

/**
 * qrRepair: optional; absent means the workflow's default (catalogue), which is not written into
 * the input echo, so stored inputs keep meaning what they meant.
 */
function qrRepair(entry: QrImageEntry | QrContentEntry | QrV5Entry) {
  const note =
    entry.family === 'qr-image'
      ? ' For this workflow the code is the client image: the worker locates its modules and repairs like v4/v5; a code it cannot locate (rotated, in perspective: a photo) is only checked.'
      : '';
  return z
    .enum(QR_REPAIR_MODES)
    .optional()
    .meta({
      description:
        'What to do with an output a phone might not scan: off (deliver as generated), on_failure (repair the misread modules of images that fail the scan check), ' +
        `always (repair every image). Default for this workflow: ${entry.qrRepair}.${note}`,
      default: entry.qrRepair,
    });
}

function seed() {
  return numberInRange(LIMITS.seed).optional().meta({ description: 'Random seed; random when absent (the chosen value is stored in the input echo).' });
}

// ---------------------------------------------------------------------------
// Shapes per family
// ---------------------------------------------------------------------------

interface Built {
  schema: z.ZodObject;
  kinds: Record<string, FieldKind>;
}

function qrImageSchema(entry: QrImageEntry, options: SchemaOptions): Built {
  const p = entry.params;
  return {
    schema: z.object({
      workflow: z.literal(entry.name),
      qrText: requiredText('The prompt to generate.'),
      qrImage: imageUrl('URL of the classic (black and white) QR code image.', options),
      qrStrength: numberWithDefault(p.qrStrength, 'Strength of the QR code in the image.'),
      qrSteps: qrSteps(p.qrSteps),
      qrRepair: qrRepair(entry),
      seed: seed(),
      negativePrompt: optionalText('What should not appear.'),
      webhook: webhookUrl(options),
    }),
    kinds: {
      workflow: 'literal', qrText: 'text', qrImage: 'url', qrStrength: 'number', qrSteps: 'digits-or-integer',
      qrRepair: 'enum', seed: 'integer', negativePrompt: 'text', webhook: 'url',
    },
  };
}

function qrContentSchema(entry: QrContentEntry, options: SchemaOptions): Built {
  const p = entry.params;
  const stepsShape = p.qrSteps ? { qrSteps: qrSteps(p.qrSteps) } : {};
  return {
    schema: z.object({
      workflow: z.literal(entry.name),
      qrText: requiredText('The prompt to generate.'),
      qrContent: qrContent(),
      qrStrength: numberWithDefault(p.qrStrength, 'Strength of the QR code in the image.'),
      ...stepsShape,
      batchSize: numberWithDefault(p.batchSize, 'Number of images to produce.'),
      qrRepair: qrRepair(entry),
      seed: seed(),
      negativePrompt: optionalText('What should not appear.'),
      webhook: webhookUrl(options),
    }),
    kinds: {
      workflow: 'literal', qrText: 'text', qrContent: 'string', qrStrength: 'number',
      ...(p.qrSteps ? { qrSteps: 'digits-or-integer' as const } : {}),
      batchSize: 'integer', qrRepair: 'enum', seed: 'integer', negativePrompt: 'text', webhook: 'url',
    },
  };
}

/**
 * For a tier that samples in a narrower range than it accepts (v5s): what a larger value runs
 * as, told where clients read the field (the OpenAPI document is built from these schemas).
 */
function samplingNote(entry: QrV5Entry, field: 'steps' | 'cfg'): string {
  const accepted = entry.params[field];
  const runs = entry.sampling[field];
  if (runs.min === accepted.min && runs.max === accepted.max) return '';
  return (
    ` This fast tier samples with ${runs.min}..${runs.max}: a larger value (a body written for v5) runs as ${runs.max}.` +
    ' The input echo keeps the value sent; the price does not depend on it.'
  );
}

function qrV5Schema(entry: QrV5Entry, options: SchemaOptions): Built {
  const p = entry.params;
  const d = entry.enumDefaults;
  return {
    schema: z.object({
      workflow: z.literal(entry.name),
      prompt: requiredText('The prompt to generate.'),
      qrContent: qrContent(),
      negativePrompt: optionalText(`What should not appear. Used only with cfg above 1 (classifier-free guidance${p.cfg.default <= 1 ? `; this tier's default cfg is ${p.cfg.default}, where it changes nothing` : ''}).`),
      seed: seed(),
      steps: numberWithDefault(p.steps, `Sampling steps; more may be more artistic but less scannable.${samplingNote(entry, 'steps')}`),
      qrStrength: numberWithDefault(p.qrStrength, 'Strength of the QR code in the image.'),
      cfg: numberWithDefault(p.cfg, `How closely generation follows the prompt.${samplingNote(entry, 'cfg')}`),
      model: z.enum(V5_MODELS).default(d.model).meta({ description: 'Model style.' }),
      batchSize: numberWithDefault(p.batchSize, 'Number of images to produce.'),
      enhance: z.enum(ENHANCE_VALUES).optional().meta({ description: 'face: extra steps to improve faces (extra cost). Absent: no enhancement.' }),
      aspectRatio: z.enum(ASPECT_RATIOS).default(d.aspectRatio).meta({ description: 'Aspect ratio of the output.' }),
      resolution: z.enum(RESOLUTIONS).default(d.resolution).meta({ description: 'Resolution tier of the output (see the size table).' }),
      qrCodePartern: z.enum(QR_CODE_PATTERNS).default(d.qrCodePartern).meta({ description: 'Pattern of the classic QR code (name spelled as in the spec).' }),
      qrX: z.int().min(0).max(MAX_OUTPUT_SIDE).optional().meta({ description: 'Left edge of the QR code in output pixels; centred when absent. Must keep the code inside the canvas.' }),
      qrY: z.int().min(0).max(MAX_OUTPUT_SIDE).optional().meta({ description: 'Top edge of the QR code in output pixels; centred when absent. Must keep the code inside the canvas.' }),
      qrRatio: numberWithDefault(p.qrRatio, "Side of the QR code as a fraction of the output's short side."),
      preset: z.enum(PRESETS).optional().meta({ description: 'Style preset (spec 4.4).' }),
      qrRepair: qrRepair(entry),
      webhook: webhookUrl(options),
    }),
    kinds: {
      workflow: 'literal', prompt: 'text', qrContent: 'string', negativePrompt: 'text', seed: 'integer', steps: 'integer',
      qrStrength: 'number', cfg: 'number', model: 'enum', batchSize: 'integer', enhance: 'enum', aspectRatio: 'enum',
      resolution: 'enum', qrCodePartern: 'enum', qrX: 'integer', qrY: 'integer', qrRatio: 'number', preset: 'enum',
      qrRepair: 'enum', webhook: 'url',
    },
  };
}

function outpaintingSchema(entry: OutpaintingEntry, options: SchemaOptions): Built {
  const p = entry.params;
  const padding = (side: string) => numberInRange(p.padding).meta({ description: `Pixels to add on the ${side}.` });
  return {
    schema: z.object({
      workflow: z.literal(entry.name),
      image: imageUrl('URL of the original image to extend.', options),
      prompt: optionalText('Prompt; when absent the worker captions the image and uses the caption.'),
      negativePrompt: optionalText('What should not appear.'),
      seed: seed(),
      image_width: numberInRange(p.imageWidth).meta({ description: 'Width the original image is resized to before painting.' }),
      image_height: numberInRange(p.imageHeight).meta({ description: 'Height the original image is resized to before painting.' }),
      padding_left: padding('left'),
      padding_bottom: padding('bottom'),
      padding_top: padding('top'),
      padding_right: padding('right'),
      type: z.enum(OUTPAINTING_TYPES).meta({ description: 'one_shot (fewer steps, cheaper) or multi_shots (more steps, more expensive).' }),
      webhook: webhookUrl(options),
    }),
    kinds: {
      workflow: 'literal', image: 'url', prompt: 'text', negativePrompt: 'text', seed: 'integer', image_width: 'integer',
      image_height: 'integer', padding_left: 'integer', padding_bottom: 'integer', padding_top: 'integer',
      padding_right: 'integer', type: 'enum', webhook: 'url',
    },
  };
}

function build(entry: WorkflowEntry, options: SchemaOptions): Built {
  switch (entry.family) {
    case 'qr-image':
      return qrImageSchema(entry, options);
    case 'qr-content':
      return qrContentSchema(entry, options);
    case 'qr-v5':
      return qrV5Schema(entry, options);
    case 'outpainting':
      return outpaintingSchema(entry, options);
  }
}

export interface SchemaSet {
  readonly schemas: Readonly<Record<WorkflowName, z.ZodObject>>;
  readonly kinds: Readonly<Record<WorkflowName, Readonly<Record<string, FieldKind>>>>;
}

function buildSet(options: SchemaOptions): SchemaSet {
  const schemas = {} as Record<WorkflowName, z.ZodObject>;
  const kinds = {} as Record<WorkflowName, Record<string, FieldKind>>;
  for (const name of WORKFLOWS) {
    const built = build(catalogue[name], options);
    schemas[name] = built.schema;
    kinds[name] = built.kinds;
  }
  return { schemas, kinds };
}

const sets = new Map<boolean, SchemaSet>();

/** The schema set for the given options (built once per value of allowPrivateUrls). */
export function schemaSetFor(options: SchemaOptions): SchemaSet {
  const key = options.allowPrivateUrls === true;
  let set = sets.get(key);
  if (!set) {
    set = buildSet({ allowPrivateUrls: key });
    sets.set(key, set);
  }
  return set;
}

/** Production schemas (https-only webhooks), keyed by workflow, for OpenAPI / JSON Schema generation. */
export const requestSchemas: Readonly<Record<WorkflowName, z.ZodObject>> = schemaSetFor({ allowPrivateUrls: false }).schemas;

/** All create bodies as one union discriminated by `workflow`. */
export const createBodySchema = z.discriminatedUnion(
  'workflow',
  WORKFLOWS.map((name) => requestSchemas[name]) as unknown as [z.ZodObject, ...z.ZodObject[]],
);
