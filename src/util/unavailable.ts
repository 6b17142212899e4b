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

/**
 * The database took a COMMIT and its answer was lost (the connection broke, or the statement
 * timed out on our side while the server was stalled): the transaction may have committed.
 * Whoever ran it must find out before saying "nothing was changed".
 */
export class CommitUnconfirmedError extends DependencyUnavailableError {
  constructor(retryAfterSeconds: number, options?: { cause?: unknown }) {
    super('database', retryAfterSeconds, options);
    this.name = 'CommitUnconfirmedError';
  }
}

/**
 * Runs `attempt` until it succeeds, retrying once a second while it fails with
 * DependencyUnavailableError and `waitMs` has not passed; any other failure is thrown at once.
 * For start-up: a replica started while its database or broker is still starting (failing over,
 * restarting) comes up with it instead of exiting.
 */
export async function waitWhileUnavailable<T>(attempt: () => Promise<T>, waitMs: number, onWaiting: (error: DependencyUnavailableError) => void): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof DependencyUnavailableError) || Date.now() >= deadline) throw error;
      onWaiting(error);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
