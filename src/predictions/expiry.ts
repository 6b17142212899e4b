import type { Logger } from 'pino';
import type { Database } from '../store/database.ts';
import { failWithRefund, type ChangeFollowers } from './status-change.ts';

/**
 * The backstop behind MaxDeliver (max-deliveries.ts): a prediction still queued or executing
 * long after any run of it could have ended is failed and refunded, so no charge is held for
 * work that will not come. What leaves one so: a job or a status event dropped as unreadable (a
 * worker or API of another version during a rolling upgrade), a MaxDeliver advisory the server
 * could not store (a JetStream leader election at that moment). Applied like any terminal
 * event: at most one refund, the webhook sent; a result that arrives after it is too late.
 */
export const EXPIRED_ERROR = {
  code: 'expired',
  message: 'No worker finished the prediction in time; the credits were refunded.',
} as const;

type ExpiryDeps = ChangeFollowers & { readonly db: Database };

/** How many predictions one query of a sweep reads. */
const BATCH = 100;
/**
 * How long one sweep goes on taking batches. A backlog (a whole queue of jobs lost) is refunded
 * within a sweep or a few, not 100 every 10 minutes; the cap keeps a sweep from overlapping the next.
 */
const SWEEP_BUDGET_MS = 60_000;

/** Fails and refunds the predictions that have been queued or executing for `afterMs` since they last changed; returns how many. */
export async function expireUnfinished(deps: ExpiryDeps, afterMs: number): Promise<number> {
  const until = Date.now() + SWEEP_BUDGET_MS;
  let expired = 0;
  for (;;) {
    const { rows } = await deps.db.query<{ id: string }>(
      `SELECT id FROM predictions
        WHERE status IN ('queued', 'executing') AND updated_at <= now() - make_interval(secs => $1::double precision / 1000)
        ORDER BY updated_at LIMIT $2`,
      [afterMs, BATCH],
    );
    let applied = 0;
    for (const { id } of rows) {
      // Not applied: finished meanwhile, or expired by another replica.
      if ((await failWithRefund(deps, id, EXPIRED_ERROR)).applied) applied++;
    }
    expired += applied;
    // A short batch was the last; one where nothing applied is another replica's sweep at work.
    if (rows.length < BATCH || applied === 0 || Date.now() >= until) return expired;
  }
}

/** Expires unfinished predictions every `everyMs` (and once at start); failures are logged and retried next time. */
export function startExpirySweep(deps: ExpiryDeps & { readonly logger: Logger; readonly afterMs: number; readonly everyMs?: number }): { stop(): void } {
  const logger = deps.logger.child({ component: 'expiry' });
  const sweep = () =>
    void expireUnfinished(deps, deps.afterMs).then(
      (expired) => expired > 0 && logger.warn({ expired, afterMs: deps.afterMs }, 'unfinished predictions expired: failed and refunded'),
      (error: unknown) => logger.warn({ err: error }, 'expiring unfinished predictions failed; will retry'),
    );
  sweep();
  const timer = setInterval(sweep, deps.everyMs ?? 10 * 60_000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
