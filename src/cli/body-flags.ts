/**
 * Command-line flags that stand for fields of a create body (`--qr-ratio` → qrRatio), shared by
 * the CLI commands that validate through parseCreateBody: values go into a body, and the
 * validator's messages come back naming the flag the user typed instead of the JSON field.
 */
import type { ValidationIssue } from '../workflows/validate.ts';

export interface BodyFlag {
  /** The body field. */
  readonly field: string;
  /** The flag as typed, with its dashes: '--qr-ratio'. */
  readonly flag: string;
  /** number: a numeric-looking value is sent as a number so range messages apply; anything else is sent as typed (and refused as a non-number). */
  readonly kind: 'text' | 'number';
}

/** The parseArgs option name of a flag ('--qr-ratio' → 'qr-ratio'). */
export const optionName = (flag: BodyFlag): string => flag.flag.replace(/^--/, '');

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
