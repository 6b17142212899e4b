/**
 * One process at a time on a store directory. PGlite and a local nats-server each keep their
 * store in a directory that only one process may write: a second `qr-art start` (or `qr-art
 * keys` while the service runs) on the same DATA_DIR would otherwise open the same files and
 * corrupt them. proper-lockfile takes the lock atomically (mkdir of `<dir>.lock`), refreshes it
 * while held, removes it when the process exits, and takes over a stale one, left by a process
 * that was killed, once it has not been refreshed for STALE_MS.
 *
 * Staleness alone cannot tell a dead holder from a stopped one: a `qr-art start` paused with
 * Ctrl-Z refreshes nothing, and a second start took its lock over and wrote the same database
 * beside it. So the holder also writes who it is (`<dir>.lock-owner`: host, pid and the process's
 * start time, which a reused pid does not share), and a lock whose owner is still alive on this
 * host is never taken over, however stale.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
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
    /** The holder, when it is known to be alive on this host (it may be stopped: Ctrl-Z). */
    holderPid?: number,
  ) {
    const pid = holderPid === undefined ? '' : `, pid ${holderPid}`;
    const stopped = holderPid === undefined ? '' : ' (if it is stopped, as Ctrl-Z leaves it, bring it back with fg or end it)';
    super(`${dir} is in use by another process${pid} (${what} allows one process at a time): stop the other qr-art first${stopped}, or give this one another DATA_DIR`);
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
  const attempt = (retries: number, stale: number) =>
    lock(dir, {
      stale,
      // Refreshed at the usual pace whatever `stale` this attempt judged another's lock by.
      update: staleMs / 2,
      retries: { retries, factor: 1, minTimeout: 1000, maxTimeout: 1000 },
      // The default throws from a timer, which would crash the service: report it instead.
      onCompromised: options.onCompromised ?? (() => undefined),
    });
  const held = async (release: () => Promise<void>) => {
    await writeFile(ownerFile(dir), await ownerRecord(process.pid));
    return releaseOnce(async () => {
      await rm(ownerFile(dir), { force: true });
      await release();
    });
  };
  // A live owner's lock is waited for but never taken over: judged by a stale time beyond any wait.
  const waitMs = waitMsFor(staleMs);
  const staleFor = (owner: number | undefined) => (owner === undefined ? staleMs : waitMs * 1000);
  let liveOwner = await aliveOwner(dir);
  try {
    return await held(await attempt(0, staleFor(liveOwner)));
  } catch (error) {
    if ((error as { code?: string }).code !== 'ELOCKED') throw error;
  }
  options.onWait?.();
  // A holder that has just taken the lock may have written its record since.
  liveOwner ??= await aliveOwner(dir);
  try {
    // One try a second (the first was just made).
    return await held(await attempt(Math.ceil(waitMs / 1000), staleFor(liveOwner)));
  } catch (error) {
    if ((error as { code?: string }).code === 'ELOCKED') throw new DirInUseError(dir, options.what, liveOwner);
    throw error;
  }
}

const ownerFile = (dir: string) => `${dir}.lock-owner`;

/** This host, the pid and the process's start time (/proc: clock ticks after boot), one per line. */
async function ownerRecord(pid: number): Promise<string> {
  return `${hostname()}\n${pid}\n${(await startTimeOf(pid)) ?? ''}\n`;
}

/** The pid of the lock's owner when it is alive on this host (the same process: its start time matches), else undefined. */
async function aliveOwner(dir: string): Promise<number | undefined> {
  const text = await readFile(ownerFile(dir), 'utf8').catch(() => '');
  const [host, pidText, started] = text.split('\n');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  const now = await startTimeOf(pid);
  return now !== undefined && now === started ? pid : undefined;
}

/** Field 22 of /proc/<pid>/stat; undefined when the process does not exist, has exited (a zombie), or there is no /proc. */
async function startTimeOf(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields && fields[0] !== 'Z' ? fields[19] : undefined;
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
