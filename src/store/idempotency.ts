import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Queryable } from './database.ts';

/**
 * Idempotency keys of creates (the `Idempotency-Key` header). A key belongs to one user;
 * the first create that carries it records which prediction it made and a digest of the
 * request. A later create with the same key and the same request gets that prediction back
 * (charged once); with a different request it is refused. Keys live for a configured time,
 * after which the key may be used afresh.
 *
 * Races need no extra locking: every create locks its user's row first (createPredictions),
 * so two creates of one user, in any API replica, run one after the other and the second
 * sees the key the first committed.
 */

/** What a create carries when the client sent an Idempotency-Key. */
export interface IdempotencyClaim {
  key: string;
  /** requestDigest() of the validated request. */
  requestHash: string;
}

export class IdempotencyKeyReusedError extends Error {
  constructor(readonly key: string) {
    super(`the Idempotency-Key "${key}" was already used with a different request; use a new key for a new request`);
  }
}

export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A digest of the body the client sent, as parsed JSON: the same request written with other
 * whitespace or key order is the same request. (Not the validated input: defaults such as a
 * random seed would make every retry look different.)
 */
export function requestDigest(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/**
 * JSON with every object's keys sorted. Iterative, with its own stack: a body may nest as deep
 * as its size allows (unknown fields are ignored, not refused), deeper than the call stack.
 * Writes exactly what the recursive form would, so digests already stored stay valid.
 */
function canonicalJson(root: unknown): string {
  const out: string[] = [];
  /** Values still to write, and literal text between them; last in, first written. */
  const work: Array<{ value: unknown } | string> = [{ value: root }];
  while (work.length > 0) {
    const item = work.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const { value } = item;
    if (Array.isArray(value)) {
      work.push(']');
      for (let i = value.length - 1; i >= 0; i--) {
        work.push({ value: value[i] });
        if (i > 0) work.push(',');
      }
      work.push('[');
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      work.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, v] = entries[i]!;
        work.push({ value: v }, `${JSON.stringify(key)}:`);
        if (i > 0) work.push(',');
      }
      work.push('{');
    } else {
      out.push(JSON.stringify(value) ?? '');
    }
  }
  return out.join('');
}

export interface RecordedKey {
  requestHash: string;
  predictionId: string;
}

export const claimId = (userId: string, key: string) => `${userId}\u0000${key}`;

/** The live (unexpired) keys among these, by claimId. */
export async function findLiveKeys(tx: Queryable, claims: readonly { userId: string; key: string }[], ttlMs: number): Promise<Map<string, RecordedKey>> {
  if (claims.length === 0) return new Map();
  const { rows } = await tx.query<{ user_id: string; key: string; request_hash: string; prediction_id: string }>(
    `SELECT k.user_id, k.key, k.request_hash, k.prediction_id
       FROM idempotency_keys k JOIN unnest($1::text[], $2::text[]) AS v(user_id, key) USING (user_id, key)
      WHERE k.created_at > now() - make_interval(secs => $3::double precision / 1000)`,
    [claims.map((c) => c.userId), claims.map((c) => c.key), ttlMs],
  );
  return new Map(rows.map((row) => [claimId(row.user_id, row.key), { requestHash: row.request_hash, predictionId: row.prediction_id }]));
}

/** Records the keys of accepted predictions; an expired key of the same name is replaced. */
export async function recordKeys(tx: Queryable, keys: readonly { userId: string; key: string; requestHash: string; predictionId: string }[]): Promise<void> {
  if (keys.length === 0) return;
  await tx.query(
    `INSERT INTO idempotency_keys (user_id, key, request_hash, prediction_id)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
     ON CONFLICT (user_id, key) DO UPDATE
       SET request_hash = excluded.request_hash, prediction_id = excluded.prediction_id, created_at = now()`,
    [keys.map((k) => k.userId), keys.map((k) => k.key), keys.map((k) => k.requestHash), keys.map((k) => k.predictionId)],
  );
}

/** Deletes expired keys; returns how many. */
export async function pruneExpiredKeys(db: Queryable, ttlMs: number): Promise<number> {
  const { rows } = await db.query<{ pruned: string | number }>(
    `WITH pruned AS (DELETE FROM idempotency_keys WHERE created_at <= now() - make_interval(secs => $1::double precision / 1000) RETURNING 1)
     SELECT count(*) AS pruned FROM pruned`,
    [ttlMs],
  );
  return Number(rows[0]?.pruned ?? 0);
}

/** Prunes expired keys every hour (and once at start); failures are logged and retried next time. */
export function startKeyPruner(db: Queryable, ttlMs: number, logger: Logger): { stop(): void } {
  const prune = () =>
    void pruneExpiredKeys(db, ttlMs).then(
      (pruned) => pruned > 0 && logger.info({ pruned }, 'expired idempotency keys pruned'),
      (error: unknown) => logger.warn({ err: error }, 'pruning idempotency keys failed; will retry'),
    );
  prune();
  const timer = setInterval(prune, 3600_000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
