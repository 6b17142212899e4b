/**
 * A server child left running by a parent that was killed. Node cannot ask the OS to end a child
 * with its parent, so a `kill -9` of `qr-art start` leaves its nats-server serving the store; the
 * next start would run a second server on the same files beside it. The parent records the
 * child's pid in a file in the store; the next start, once it holds the store's lock (so the
 * parent is gone), ends a process that pid still names if its command line shows it is a server
 * on this store, and nothing else (a pid is reused).
 */
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** How long a leftover server is given to stop on SIGTERM before SIGKILL. */
const GRACE_MS = 5000;
const POLL_MS = 100;

export async function recordServerPid(pidFile: string, pid: number): Promise<void> {
  await writeFile(pidFile, `${pid}\n`);
}

export async function forgetServerPid(pidFile: string): Promise<void> {
  await rm(pidFile, { force: true });
}

/**
 * Stops the process named by `pidFile` when its arguments contain `args` in order (e.g. ['-sd',
 * storeDir]); resolves to its pid, or undefined when there was none. The pid file is removed.
 */
export async function stopLeftoverServer(pidFile: string, args: readonly string[]): Promise<number | undefined> {
  const pid = Number.parseInt(await readFile(pidFile, 'utf8').catch(() => ''), 10);
  await forgetServerPid(pidFile);
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  const isLeftover = async () => containsInOrder(await commandLineOf(pid), args);
  if (!(await isLeftover())) return undefined;
  signal(pid, 'SIGTERM');
  if (!(await gone(isLeftover, GRACE_MS))) {
    signal(pid, 'SIGKILL');
    if (!(await gone(isLeftover, GRACE_MS))) throw new Error(`the leftover server (pid ${pid}) did not stop on SIGKILL`);
  }
  return pid;
}

/** A live process's arguments; [] when there is none (a zombie's command line is empty too). */
async function commandLineOf(pid: number): Promise<string[]> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && process.platform === 'linux') return [];
  }
  // No /proc (macOS): ps prints the command line, its arguments joined by spaces.
  try {
    const { stdout } = await execFileAsync('ps', ['-o', 'command=', '-p', String(pid)]);
    return stdout.trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

function containsInOrder(haystack: readonly string[], needle: readonly string[]): boolean {
  return haystack.some((_, start) => needle.every((arg, i) => haystack[start + i] === arg));
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

async function gone(isLeftover: () => Promise<boolean>, withinMs: number): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; ) {
    if (!(await isLeftover())) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return !(await isLeftover());
}
