/**
 * The prediction record as the API returns it (spec 2.2), and how a database row becomes one.
 * Creation and reads (predictions.ts) and status changes (prediction-transitions.ts) share it.
 */
import type { PredictionError, PredictionOutput } from '../messages/schemas.ts';
import { centsToCredits } from '../workflows/pricing.ts';

export type PredictionStatus = 'queued' | 'executing' | 'executed' | 'failed';

/** Statuses in the order a prediction goes through them: a status never goes back. */
export const STATUS_RANK: Readonly<Record<PredictionStatus, number>> = { queued: 0, executing: 1, executed: 2, failed: 2 };

/** The prediction record of spec 2.2, as the API returns it. */
export interface PredictionRecord {
  id: string;
  userId: string;
  createdAt: string;
  startedAt: string | null;
  updatedAt: string;
  completedAt: string | null;
  status: PredictionStatus;
  input: Record<string, unknown>;
  output: '' | PredictionOutput | string;
  error: PredictionError | null;
  refunded: boolean;
  creditType: 'API_CREDITS';
  isScanables: boolean[];
  credits: number;
}

/** A listed record omits these fields (spec 2.3). */
export type ListedPrediction = Omit<PredictionRecord, 'createdAt' | 'updatedAt' | 'error' | 'isScanables'>;

export interface PredictionRow {
  id: string;
  user_id: string;
  status: PredictionStatus;
  input: Record<string, unknown>;
  output: PredictionRecord['output'];
  error: PredictionError | null;
  refunded: boolean;
  credit_type: 'API_CREDITS';
  credits_cents: string | number;
  is_scanables: boolean[] | null;
  webhook: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  started_at: Date | string | null;
  completed_at: Date | string | null;
}

/** The columns `toRecord` reads. */
export const PREDICTION_COLUMNS = `id, user_id, status, input, output, error, refunded, credit_type, credits_cents,
  is_scanables, webhook, created_at, updated_at, started_at, completed_at`;

const iso = (value: Date | string): string => new Date(value).toISOString();
const isoOrNull = (value: Date | string | null): string | null => (value === null ? null : iso(value));

export function toRecord(row: PredictionRow): PredictionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: iso(row.created_at),
    startedAt: isoOrNull(row.started_at),
    updatedAt: iso(row.updated_at),
    completedAt: isoOrNull(row.completed_at),
    status: row.status,
    input: row.input,
    output: row.output,
    error: row.error,
    refunded: row.refunded,
    creditType: row.credit_type,
    isScanables: row.is_scanables ?? [],
    credits: centsToCredits(Number(row.credits_cents)),
  };
}

export function toListed(record: PredictionRecord): ListedPrediction {
  const { createdAt: _c, updatedAt: _u, error: _e, isScanables: _s, ...listed } = record;
  return listed;
}
