import type { Database } from '../store/database.ts';
import { STATUS_RANK as RANK, type PredictionRecord } from '../store/prediction-record.ts';
import { getPrediction } from '../store/predictions.ts';
import { TtlCache } from '../util/ttl-cache.ts';

export interface PredictionReader {
  /** The owner's prediction or null (unknown id, or another user's). */
  get(userId: string, id: string): Promise<PredictionRecord | null>;
  /** Called with every record this process writes, so its own reads are never stale. */
  remember(record: PredictionRecord): void;
}

/**
 * Reads for polling clients. A record changed by this process is seen at once; one changed
 * by another API replica may be seen up to ttlMs late (READ_CACHE_TTL_MS, 0 disables).
 */
/**
 * Whether `a` is a later state of the prediction than `b`: by status first (a queued record's
 * updatedAt comes from the API's clock, a transition's from the database's), then by updatedAt
 * (the same status changed again: a late start folded into a finished record).
 */
function isLater(a: PredictionRecord, b: PredictionRecord): boolean {
  return RANK[a.status] !== RANK[b.status] ? RANK[a.status] > RANK[b.status] : a.updatedAt > b.updatedAt;
}

export function createPredictionReader(db: Database, ttlMs: number): PredictionReader {
  const cache = new TtlCache<string, PredictionRecord>(ttlMs);
  /**
   * Keeps the later of what is cached and `record`: a read that started before this process
   * applied a change may come back after it, holding the record as it was.
   */
  const keep = (record: PredictionRecord): PredictionRecord => {
    const cached = cache.get(record.id);
    const later = cached && isLater(cached, record) ? cached : record;
    cache.set(record.id, later);
    return later;
  };
  return {
    async get(userId, id) {
      const cached = cache.get(id);
      if (cached) return cached.userId === userId ? cached : null;
      const record = await getPrediction(db, userId, id);
      return record && keep(record);
    },
    remember: (record) => void keep(record),
  };
}
