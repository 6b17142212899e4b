/**
 * Per-destination limits for webhook attempts: what keeps one slow receiver from taking
 * the dispatcher's capacity away from everyone else. Pure bookkeeping; the dispatcher
 * decides what to do with a delivery whose destination is full.
 */

/** Attempts in flight to one destination at a time, by default. */
export const DEFAULT_PER_DESTINATION = 2;

/**
 * The destination a URL's deliveries are counted against: scheme, host and port (the
 * URL's origin). That is the unit that is slow when a receiver hangs; paths on one origin
 * share its limit. An unparseable URL is its own destination (delivery gives up on it).
 */
export function destinationOf(url: string): string {
  try {
    const parsed = new URL(url);
    // Not URL.origin: that is "null" for schemes other than http(s), lumping them together.
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return url;
  }
}

export interface DestinationSlots {
  /**
   * Takes one of the destination's slots; returns the function that gives it back (once),
   * or null when the destination already has its limit in flight.
   */
  tryAcquire(destination: string): (() => void) | null;
  inFlight(destination: string): number;
  /** Attempts in flight over all destinations. */
  readonly total: number;
}

export function createDestinationSlots(perDestination: number = DEFAULT_PER_DESTINATION): DestinationSlots {
  if (!Number.isInteger(perDestination) || perDestination < 1) {
    throw new RangeError(`perDestination must be an integer >= 1, got ${perDestination}`);
  }
  // Only destinations with something in flight have an entry, so the map stays small.
  const counts = new Map<string, number>();
  let total = 0;
  return {
    tryAcquire(destination) {
      const current = counts.get(destination) ?? 0;
      if (current >= perDestination) return null;
      counts.set(destination, current + 1);
      total += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total -= 1;
        const left = (counts.get(destination) ?? 1) - 1;
        if (left > 0) counts.set(destination, left);
        else counts.delete(destination);
      };
    },
    inFlight: (destination) => counts.get(destination) ?? 0,
    get total() {
      return total;
    },
  };
}

export const DEFERRAL_BASE_MS = 250;
export const DEFERRAL_MAX_MS = 5000;
const DEFERRAL_JITTER = 0.2;

/**
 * How long a delivery whose destination is full goes back to the queue before it is
 * offered again. Short at first, so that a destination's own burst drains quickly once its
 * attempts finish; doubling with every redelivery (`deliveryCount`, 1 on the first) up to
 * 5 s, so that a backlog waiting on a hanging receiver costs a few redeliveries per second,
 * not a busy loop. ±20 % jitter keeps deferred deliveries from coming back in lockstep.
 */
export function deferralDelayMs(deliveryCount: number, random: () => number = Math.random): number {
  const doublings = Math.max(0, Math.min(Math.floor(deliveryCount) - 1, 10));
  const base = Math.min(DEFERRAL_MAX_MS, DEFERRAL_BASE_MS * 2 ** doublings);
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(base * (1 + (r * 2 - 1) * DEFERRAL_JITTER));
}

/**
 * For conditions that recur many times a second (a destination at its limit): says when to
 * log, at most once per interval per key, and how many times it happened since the last
 * line. Returns null when this occurrence should not be logged.
 */
export function createThrottledNotice(intervalMs: number, now: () => number = Date.now): (key: string) => number | null {
  const state = new Map<string, { loggedAt: number; unlogged: number }>();
  return (key) => {
    const at = now();
    const entry = state.get(key);
    if (entry && at - entry.loggedAt < intervalMs) {
      entry.unlogged += 1;
      return null;
    }
    const count = (entry?.unlogged ?? 0) + 1;
    // Entries for keys that went quiet are dropped here, so the map tracks recent keys only.
    for (const [other, value] of state) if (at - value.loggedAt >= intervalMs) state.delete(other);
    state.set(key, { loggedAt: at, unlogged: 0 });
    return count;
  };
}
