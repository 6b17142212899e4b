import { z } from 'zod';
import type { ErrorDetail } from './errors.ts';

export const DEFAULT_LIMIT = 10;
/** The largest page a client may ask for (spec 4.2 leaves it open; documented in docs/api.md). */
export const MAX_LIMIT = 100;

const integerParam = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, { message: `${name} must be an integer` })
    .transform(Number)
    .pipe(z.number().int().min(min, { message: `${name} must be at least ${min}` }).max(max, { message: `${name} must be at most ${max}` }));

/** The largest page number: keeps (page - 1) * limit a safe integer at any limit. */
const MAX_PAGE = Math.floor(Number.MAX_SAFE_INTEGER / MAX_LIMIT);

export const ListQuery = z
  .object({
    limit: integerParam('limit', 1, MAX_LIMIT).default(DEFAULT_LIMIT),
    offset: integerParam('offset', 0, Number.MAX_SAFE_INTEGER).optional(),
    // The response is a paginate-style page (page, nextPage), and clients written for that shape
    // send ?page=N: read it, rather than silently answer page 1.
    page: integerParam('page', 1, MAX_PAGE).optional(),
  })
  .superRefine((query, ctx) => {
    if (query.offset !== undefined && query.page !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['page'], params: { rule: 'exclusive' }, message: 'give offset or page, not both' });
    }
  })
  .transform(({ limit, offset, page }) => ({ limit, offset: offset ?? (page === undefined ? 0 : (page - 1) * limit) }));

export function parseListQuery(query: unknown): { ok: true; value: { limit: number; offset: number } } | { ok: false; details: ErrorDetail[] } {
  // A repeated parameter arrives as an array: reject rather than guess.
  const parsed = ListQuery.safeParse(query ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
  // One detail per (field, rule), the last: z.int() reports its own safe-integer bound before the field's.
  const details = new Map<string, ErrorDetail>();
  for (const issue of parsed.error.issues) {
    const field = String(issue.path[0] ?? '');
    const given = (query as Record<string, unknown> | undefined)?.[field];
    const detail = Array.isArray(given)
      ? { field, rule: 'repeated', message: `${field} must be given once; got ${given.length} values` }
      : { field, rule: ruleOf(issue), message: issue.code === 'invalid_type' ? `${field} must be an integer` : issue.message };
    details.set(`${detail.field}\u0000${detail.rule}`, detail);
  }
  return { ok: false, details: [...details.values()] };
}

function ruleOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'too_small') return 'min';
  if (issue.code === 'too_big') return 'max';
  if (issue.code === 'custom') return String(issue.params?.rule ?? 'custom');
  return 'integer';
}

export interface PageMeta {
  totalDocs: number;
  offset: number;
  limit: number;
  totalPages: number;
  page: number;
  pagingCounter: number;
  hasPrevPage: boolean;
  hasNextPage: boolean;
  prevPage: number | null;
  nextPage: number | null;
}

/**
 * Offset pagination in the paginated-list shape of spec 2.3:
 *   page = floor(offset / limit) + 1, totalPages = max(1, ceil(totalDocs / limit)),
 *   pagingCounter = offset + 1 (1-based position of the first doc on this page),
 *   hasPrevPage = offset > 0, hasNextPage = offset + limit < totalDocs.
 */
export function pageMeta(totalDocs: number, offset: number, limit: number): PageMeta {
  const page = Math.floor(offset / limit) + 1;
  const hasPrevPage = offset > 0;
  const hasNextPage = offset + limit < totalDocs;
  return {
    totalDocs,
    offset,
    limit,
    totalPages: Math.max(1, Math.ceil(totalDocs / limit)),
    page,
    pagingCounter: offset + 1,
    hasPrevPage,
    hasNextPage,
    prevPage: hasPrevPage ? Math.max(1, page - 1) : null,
    nextPage: hasNextPage ? page + 1 : null,
  };
}
