/**
 * A dependency (the database, the broker) cannot answer right now: the request was not
 * served, and trying again shortly may succeed. The HTTP layer turns it into a 503 with
 * Retry-After; background consumers redeliver. Thrown by the store and queue adapters, so
 * nothing above them needs to know a driver's error vocabulary.
 */
export type Dependency = 'database' | 'broker';

export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: Dependency,
    /** What a client should wait before retrying (the Retry-After header). */
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(`the ${dependency} is temporarily unavailable`, options);
    this.name = 'DependencyUnavailableError';
  }
}
