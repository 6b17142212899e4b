/**
 * A zod issue turned into a ValidationIssue: the field, a short rule token and a sentence that
 * names what was expected and what came (with a near-miss hint for enum values).
 */
import type { z } from 'zod';
import type { FieldKind } from './schemas.ts';

export interface ValidationIssue {
  /** Dotted path of the field ("qrStrength"), or "" for the body as a whole. */
  field: string;
  /**
   * Short machine token: required, type, integer, min, max, enum, url, https_url, public_host, no_credentials,
   * unknown_workflow, qr_capacity, canvas_bounds, module_size, min_total, characters (and internal, which should never happen).
   */
  rule: string;
  /** Human-readable sentence. */
  message: string;
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return 'a string';
    case 'number':
      return Number.isFinite(v) ? `the number ${v}` : `the non-finite number ${String(v)}`;
    case 'boolean':
      return `the boolean ${v}`;
    case 'object':
      return 'an object';
    case 'undefined':
      return 'nothing';
    default:
      return `a value of type ${typeof v}`;
  }
}

export function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}...` : s);
}

const KIND_NOUN: Record<FieldKind, string> = {
  string: 'a string',
  text: 'a string',
  url: 'a URL string',
  integer: 'an integer',
  number: 'a finite number',
  enum: 'a string',
  'digits-or-integer': 'an integer',
  literal: 'a string',
};

/** Case/spacing-insensitive near-miss for enum values ("FullHd" -> "FullHD", "Art Deco" -> ...). */
function suggestion(values: readonly unknown[], got: unknown): string | undefined {
  if (typeof got !== 'string') return undefined;
  const norm = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, ' ').trim();
  const target = norm(got);
  const hit = values.find((v) => typeof v === 'string' && (norm(v) === target || norm(v).endsWith(` ${target}`)));
  return typeof hit === 'string' ? hit : undefined;
}

function enumMessage(field: string, values: readonly unknown[], got: unknown): string {
  const hint = suggestion(values, got);
  const gotText = typeof got === 'string' ? quote(got) : describeValue(got);
  const list =
    values.length <= 20
      ? `one of: ${values.join(', ')}`
      : `one of the ${values.length} names listed in the documentation (e.g. ${values.slice(0, 3).map((v) => quote(String(v))).join(', ')})`;
  return `${field} must be ${list}; got ${gotText}${hint ? ` (did you mean ${quote(hint)}?)` : ''}`;
}

function fmt(n: unknown): string {
  return typeof n === 'bigint' ? n.toString() : String(n);
}

export function mapIssue(issue: z.core.$ZodIssue, raw: Record<string, unknown>, kinds: Record<string, FieldKind>): ValidationIssue {
  const field = issue.path.map(String).join('.');
  const top = issue.path[0];
  const got = typeof top === 'string' ? raw[top] : undefined;
  const kind: FieldKind | undefined = typeof top === 'string' ? kinds[top] : undefined;

  if (got === undefined && issue.path.length === 1) {
    return { field, rule: 'required', message: `${field} is required` };
  }
  if (kind === 'digits-or-integer' && issue.code !== 'too_small' && issue.code !== 'too_big') {
    return {
      field,
      rule: 'integer',
      message: `${field} must be an integer (a string of decimal digits is also accepted); got ${typeof got === 'string' ? quote(got) : describeValue(got)}`,
    };
  }

  switch (issue.code) {
    case 'invalid_type': {
      if (kind === 'integer' && typeof got === 'number' && Number.isFinite(got)) {
        return { field, rule: 'integer', message: `${field} must be an integer; got ${got}` };
      }
      const noun = kind ? KIND_NOUN[kind] : `of type ${issue.expected}`;
      return { field, rule: 'type', message: `${field} must be ${noun}; got ${describeValue(got)}` };
    }
    case 'too_small': {
      if (issue.origin === 'string') {
        return { field, rule: 'required', message: `${field} must not be empty` };
      }
      return { field, rule: 'min', message: `${field} must be at least ${fmt(issue.minimum)}; got ${fmt(got)}` };
    }
    case 'too_big': {
      if (issue.origin === 'string') {
        return { field, rule: 'max', message: `${field} must be at most ${fmt(issue.maximum)} characters long` };
      }
      return { field, rule: 'max', message: `${field} must be at most ${fmt(issue.maximum)}; got ${fmt(got)}` };
    }
    case 'invalid_value':
      if (kind === 'enum' && typeof got !== 'string') {
        return { field, rule: 'type', message: `${enumMessage(field, issue.values, got)}`.replace(' must be ', ' must be a string, ') };
      }
      return {
        field,
        rule: 'enum',
        message: kind === 'literal' ? `${field} must be ${issue.values.map(String).join(' or ')}` : enumMessage(field, issue.values, got),
      };
    case 'custom': {
      const rule = typeof issue.params?.rule === 'string' ? issue.params.rule : 'invalid';
      return { field, rule, message: `${field} ${issue.message}` };
    }
    case 'invalid_union':
      return { field, rule: 'type', message: `${field} must be ${kind ? KIND_NOUN[kind] : 'valid'}; got ${describeValue(got)}` };
    case 'invalid_format':
      return { field, rule: 'format', message: `${field} has an invalid format` };
    default:
      return { field, rule: 'invalid', message: `${field}: ${issue.message}` };
  }
}

/**
 * One issue per (field, rule), at the position of the first, with the text of the last: zod can
 * report the same kind of bound twice (z.int()'s safe-integer range, then the field's own, tighter
 * range), and the last one is the field's own.
 */
export function dedupe(issues: ValidationIssue[]): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const at = new Map<string, number>();
  for (const issue of issues) {
    const key = `${issue.field}\u0000${issue.rule}`;
    const index = at.get(key);
    if (index === undefined) {
      at.set(key, out.length);
      out.push(issue);
    } else {
      out[index] = issue;
    }
  }
  return out;
}
