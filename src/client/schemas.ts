/**
 * What the API answers, as zod schemas: the client checks every answer at the edge, so a
 * caller gets typed records or a QrArtApiError naming what was off, never a silently wrong
 * object. Fields this client does not know are dropped rather than refused, so a newer server
 * that adds some does not break an older client (and the types stay exact: a typo in a field
 * name is a compile error, not an `unknown`).
 *
 * The shapes are those of docs/api.md (The record, Listing, Errors) and of the issue-15
 * endpoints (quote, events). test/client/bodies.test.ts checks at compile time that the
 * server's own record types fit these.
 */
import { z } from 'zod';

export const PREDICTION_STATUSES = ['queued', 'executing', 'executed', 'failed'] as const;
export type PredictionStatus = (typeof PREDICTION_STATUSES)[number];

/** The two statuses after which a prediction never changes again. */
export const isTerminalStatus = (status: PredictionStatus): boolean => status === 'executed' || status === 'failed';

export const PredictionOutputSchema = z.object({
  /** Image URLs in request order; each URL is its own capability (no key needed to fetch it). */
  images: z.array(z.string()),
  /** Outpainting without a prompt: the caption that was used as the prompt. */
  caption: z.string().optional(),
  /** QR workflows: per image, the share (0..1) of simulated phone captures that read the code. */
  scanRobustness: z.array(z.number()).optional(),
});
export type PredictionOutput = z.infer<typeof PredictionOutputSchema>;

export const PredictionErrorSchema = z.object({ code: z.string(), message: z.string() });
export type PredictionError = z.infer<typeof PredictionErrorSchema>;

export const PredictionRecordSchema = z.object({
  id: z.string(),
  userId: z.string(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  updatedAt: z.string(),
  completedAt: z.string().nullable(),
  status: z.enum(PREDICTION_STATUSES),
  /** The normalized request echo (defaults filled in, the seed resolved). */
  input: z.record(z.string(), z.unknown()),
  /** '' while queued or executing; the images on success; the text 'NSFW contents detected!' on an NSFW rejection. */
  output: z.union([PredictionOutputSchema, z.string()]),
  error: PredictionErrorSchema.nullable(),
  refunded: z.boolean(),
  creditType: z.string(),
  /** One verdict per image once executed; [] before (and always for outpainting). */
  isScanables: z.array(z.boolean()),
  credits: z.number(),
});
export type PredictionRecord = z.infer<typeof PredictionRecordSchema>;

/** A listed record omits these fields (spec 2.3). */
export const ListedPredictionSchema = PredictionRecordSchema.omit({ createdAt: true, updatedAt: true, error: true, isScanables: true });
export type ListedPrediction = z.infer<typeof ListedPredictionSchema>;

export const PredictionPageSchema = z.object({
  docs: z.array(ListedPredictionSchema),
  totalDocs: z.number().int(),
  offset: z.number().int(),
  limit: z.number().int(),
  totalPages: z.number().int(),
  page: z.number().int(),
  pagingCounter: z.number().int(),
  hasPrevPage: z.boolean(),
  hasNextPage: z.boolean(),
  prevPage: z.number().int().nullable(),
  nextPage: z.number().int().nullable(),
});
export type PredictionPage = z.infer<typeof PredictionPageSchema>;

/** Create and get answer `{success: true, data: record}`; so does a webhook's body. */
export const PredictionEnvelopeSchema = z.object({ success: z.literal(true), data: PredictionRecordSchema });
export type PredictionEnvelope = z.infer<typeof PredictionEnvelopeSchema>;

/** The list answers `{data: page}` (no `success`, spec 2.3). */
export const ListEnvelopeSchema = z.object({ data: PredictionPageSchema });

export const QuoteSchema = z.object({
  workflow: z.string(),
  credits: z.number(),
  /** The request as the API would record it: defaults filled in; seed absent when not given. */
  input: z.record(z.string(), z.unknown()),
});
export type Quote = z.infer<typeof QuoteSchema>;
export const QuoteEnvelopeSchema = z.object({ success: z.literal(true), data: QuoteSchema });

/** An SSE `progress` event: denoising steps done over all steps of the job (every image). */
export const ProgressSchema = z.object({ step: z.number().int().min(0), total: z.number().int().min(1) });
export type Progress = z.infer<typeof ProgressSchema>;

export const ErrorDetailSchema = z.object({ field: z.string(), rule: z.string(), message: z.string().optional() });
export type ErrorDetail = z.infer<typeof ErrorDetailSchema>;

/** Every rejected request: {"success":false,"error":{"code","message","details":[...]}} (docs/api.md, Errors). */
export const ErrorBodySchema = z.object({
  success: z.literal(false),
  error: z.object({ code: z.string(), message: z.string(), details: z.array(ErrorDetailSchema).default([]) }),
});
