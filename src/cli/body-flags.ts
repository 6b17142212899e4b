/**
 * Command-line flags that stand for fields of a create body (`--qr-ratio` → qrRatio), shared by
 * the CLI commands that validate through parseCreateBody: values go into a body, and the
 * validator's messages come back naming the flag the user typed instead of the JSON field.
 */
import { catalogue } from '../workflows/catalogue.ts';
import { isWorkflowName } from '../workflows/names.ts';
import { requestSchemas } from '../workflows/schemas.ts';
import type { ValidationIssue } from '../workflows/validate.ts';

export interface BodyFlag {
  /** The body field. */
  readonly field: string;
  /** The flag as typed, with its dashes: '--qr-ratio'. */
  readonly flag: string;
  /** number: a numeric-looking value is sent as a number so range messages apply; anything else is sent as typed (and refused as a non-number). */
  readonly kind: 'text' | 'number';
}

/**
 * The fields of a QR art generation, under their v5 names: v1-v4 bodies call the prompt qrText
 * and the steps qrSteps (forWorkflow renames them).
 */
export const GENERATION_FLAGS: readonly BodyFlag[] = [
  { field: 'prompt', flag: '--prompt', kind: 'text' },
  { field: 'qrContent', flag: '--qr-content', kind: 'text' },
  { field: 'qrImage', flag: '--qr-image', kind: 'text' },
  { field: 'negativePrompt', flag: '--negative-prompt', kind: 'text' },
  { field: 'seed', flag: '--seed', kind: 'number' },
  { field: 'steps', flag: '--steps', kind: 'number' },
  { field: 'cfg', flag: '--cfg', kind: 'number' },
  { field: 'qrStrength', flag: '--qr-strength', kind: 'number' },
  { field: 'model', flag: '--model', kind: 'text' },
  { field: 'batchSize', flag: '--batch-size', kind: 'number' },
  { field: 'aspectRatio', flag: '--aspect-ratio', kind: 'text' },
  { field: 'resolution', flag: '--resolution', kind: 'text' },
  { field: 'qrX', flag: '--qr-x', kind: 'number' },
  { field: 'qrY', flag: '--qr-y', kind: 'number' },
  { field: 'qrRatio', flag: '--qr-ratio', kind: 'number' },
  { field: 'qrCodePartern', flag: '--pattern', kind: 'text' },
  { field: 'preset', flag: '--preset', kind: 'text' },
  { field: 'enhance', flag: '--enhance', kind: 'text' },
  { field: 'qrRepair', flag: '--qr-repair', kind: 'text' },
];

/** Flags named after the workflow's own fields: v1-v4 (client image and v4 families) take qrText and qrSteps. */
export function forWorkflow(flags: readonly BodyFlag[], workflow: string): readonly BodyFlag[] {
  const family = isWorkflowName(workflow) ? catalogue[workflow].family : undefined;
  if (family !== 'qr-image' && family !== 'qr-content') return flags;
  const rename: Record<string, string> = { prompt: 'qrText', steps: 'qrSteps' };
  return flags.map((f) => (rename[f.field] ? { ...f, field: rename[f.field]! } : f));
}

/** The parseArgs option name of a flag ('--qr-ratio' → 'qr-ratio'). */
export const optionName = (flag: BodyFlag): string => flag.flag.replace(/^--/, '');

/**
 * The flags given that `workflow` does not take, one line each: refused, not silently dropped
 * (the server drops fields a workflow does not read). A workflow this build does not know: none.
 */
export function flagsNotTaken(flags: readonly BodyFlag[], values: Readonly<Record<string, unknown>>, workflow: string): string[] {
  if (!isWorkflowName(workflow)) return [];
  const accepted = new Set(Object.keys(requestSchemas[workflow].shape));
  return flags.filter((f) => values[optionName(f)] !== undefined && !accepted.has(f.field)).map((f) => `${f.flag}: ${workflow} does not take ${f.field}`);
}

/** The --body fields `workflow` does not take, as lines; the server would drop them as it would such a flag. */
export function bodyFieldsNotTaken(body: Readonly<Record<string, unknown>>, workflow: string): string[] {
  if (!isWorkflowName(workflow)) return [];
  const accepted = new Set(Object.keys(requestSchemas[workflow].shape));
  return Object.keys(body)
    .filter((field) => !accepted.has(field))
    .map((field) => `--body: ${workflow} does not take ${field}`);
}

/** The body fields of the flags that were given. */
export function bodyFromFlags(flags: readonly BodyFlag[], values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const f of flags) {
    const value = values[optionName(f)];
    if (typeof value !== 'string') continue;
    body[f.field] = f.kind === 'number' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  }
  return body;
}

/** Validator issues as lines that name the flag ("--qr-ratio must be at most 1"). */
export function flagMessages(issues: readonly ValidationIssue[], flags: readonly BodyFlag[]): string[] {
  return issues.map((issue) => {
    const flag = flags.find((f) => f.field === issue.field)?.flag ?? issue.field;
    return issue.message.startsWith(issue.field) ? flag + issue.message.slice(issue.field.length) : `${flag}: ${issue.message}`;
  });
}
