/**
 * One process at a time on a store directory. PGlite and a local nats-server each keep their
 * store in a directory that only one process may write: a second `qr-art start` (or `qr-art
 * keys` while the service runs) on the same DATA_DIR would otherwise open the same files and
 * corrupt them. proper-lockfile takes the lock atomically (mkdir of `<dir>.lock`), refreshes it
 * while held, removes it when the process exits, and takes over a stale one, left by a process
 * that was killed, once it has not been refreshed for STALE_MS.
 */
import { lock } from 'proper-lockfile';

/** A lock not refreshed for this long belongs to a dead process (proper-lockfile's default). */
const STALE_MS = 10_000;

/** How long a held lock is waited for: the stale time and two seconds more. */
const waitMsFor = (staleMs: number) => staleMs + 2000;

/** The wait at the default stale time, for messages that tell a user how long it will be. */
export const LOCK_WAIT_MS = waitMsFor(STALE_MS);

export class DirInUseError extends Error {
  constructor(
    readonly dir: string,
    what: string,
  ) {
    super(`${dir} is in use by another process (${what} allows one process at a time): stop the other qr-art first, or give this one another DATA_DIR`);
  }
}

export interface DirLockOptions {
  /** What keeps its store there, for the error message ('the embedded database'). */
  what: string;
  /** Called when a lock wait begins (another holder, or a stale lock not yet taken over). */
  onWait?: () => void;
  /** Called if the lock is lost while held (its file removed, or not refreshed in time). */
  onCompromised?: (error: Error) => void;
  /** How long an unrefreshed lock is taken to be a dead holder's (at least 2000 ms); STALE_MS by default. */
  staleMs?: number;
}

/**
 * Locks `dir` (which must exist) for this process; resolves to the release. A lock that is held
 * is waited for up to the stale time plus two seconds, long enough for a killed holder's lock to
 * go stale, and then refused with DirInUseError.
 */
export async function lockDir(dir: string, options: DirLockOptions): Promise<() => Promise<void>> {
  const staleMs = options.staleMs ?? STALE_MS;
  const attempt = (retries: number) =>
    lock(dir, {
      stale: staleMs,
      retries: { retries, factor: 1, minTimeout: 1000, maxTimeout: 1000 },
      // The default throws from a timer, which would crash the service: report it instead.
      onCompromised: options.onCompromised ?? (() => undefined),
    });
  try {
    return releaseOnce(await attempt(0));
  } catch (error) {
    if ((error as { code?: string }).code !== 'ELOCKED') throw error;
  }
  options.onWait?.();
  try {
    // One try a second (the first was just made).
    return releaseOnce(await attempt(Math.ceil(waitMsFor(staleMs) / 1000)));
  } catch (error) {
    if ((error as { code?: string }).code === 'ELOCKED') throw new DirInUseError(dir, options.what);
    throw error;
  }
}

/**
 * The release, safe to call again (a store stopped twice, by a caller and then at shutdown) and
 * after the lock was lost: proper-lockfile throws ERELEASED then, and there is nothing left to free.
 */
function releaseOnce(release: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    (done ??= release().catch((error: unknown) => {
      if ((error as { code?: string }).code !== 'ERELEASED') throw error;
    }));
}
