/**
 * Retry delays for webhook delivery: a growing schedule with ±20 % jitter, honouring the
 * receiver's Retry-After header.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Delay before retry n (index n-1): 5 s, 30 s, 2 m, 5 m, 30 m, 2 h, 5 h, 10 h, then give up. */
export const DEFAULT_WEBHOOK_SCHEDULE_MS: readonly number[] = Object.freeze([
  5 * SECOND,
  30 * SECOND,
  2 * MINUTE,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
]);

export const JITTER_FRACTION = 0.2;

/**
 * Parses a Retry-After header value (delay-seconds or HTTP-date) into milliseconds from
 * `nowMs`; null when absent or unparseable. A date in the past gives 0.
 */
export function parseRetryAfterMs(header: string | null | undefined, nowMs: number = Date.now()): number | null {
  if (header === null || header === undefined) return null;
  const v = header.trim();
  if (v === '') return null;
  if (/^\d+$/.test(v)) {
    const s = Number(v);
    return Number.isFinite(s) ? s * SECOND : null;
  }
  // HTTP-date (IMF-fixdate, or the obsolete RFC 850 / asctime forms Date.parse also accepts).
  if (!/[a-z]/i.test(v)) return null;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return null;
  return Math.max(0, t - nowMs);
}

/**
 * Delay in ms before the next attempt after failure number `attempt` (1 = the first failed
 * attempt), or null when the schedule is exhausted and delivery should be given up.
 *
 * The schedule value gets ±20 % jitter (random() in [0,1): 0 → -20 %, 0.5 → 0, →1 → +20 %).
 * A Retry-After header (seconds or HTTP date) can lengthen the delay: the result is the
 * larger of the two, but a Retry-After-driven delay is capped at twice the schedule's
 * largest value.
 */
export function nextDelayMs(
  attempt: number,
  schedule: readonly number[],
  retryAfterHeader?: string | null,
  random: () => number = Math.random,
  nowMs: number = Date.now(),
): number | null {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
  }
  if (attempt > schedule.length) return null;
  const base = schedule[attempt - 1] as number;
  const r = Math.min(1, Math.max(0, random()));
  const jittered = Math.max(0, Math.round(base * (1 + (r * 2 - 1) * JITTER_FRACTION)));
  const retryAfter = parseRetryAfterMs(retryAfterHeader, nowMs);
  if (retryAfter === null || retryAfter <= jittered) return jittered;
  const cap = Math.max(...schedule) * 2;
  return Math.max(jittered, Math.min(retryAfter, cap));
}

const UNIT_MS: Record<string, number> = { '': 1, ms: 1, s: SECOND, m: MINUTE, h: HOUR };

/**
 * Parses a comma-separated schedule: "100,200,400" (milliseconds), units allowed
 * ("5s,30s,2m,1h", "250ms"). Throws on empty or invalid entries.
 */
export function parseScheduleMs(text: string): number[] {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length === 0 || (parts.length === 1 && parts[0] === '')) {
    throw new Error('retry schedule must list at least one delay');
  }
  return parts.map((p) => {
    const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i.exec(p);
    if (!m) throw new Error(`invalid retry schedule entry "${p}" (expected e.g. 500, 500ms, 5s, 2m, 1h)`);
    const ms = Math.round(Number(m[1]) * (UNIT_MS[(m[2] ?? '').toLowerCase()] as number));
    if (!Number.isSafeInteger(ms)) throw new Error(`retry schedule entry "${p}" is out of range`);
    return ms;
  });
}
