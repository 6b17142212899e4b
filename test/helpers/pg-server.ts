import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/runtime/local-nats.ts';

/**
 * A throwaway PostgreSQL server owned by one test file, so the test may stop, restart and
 * pause it (the shared server of TEST_DATABASE_URL must not be touched). The postmaster is
 * spawned directly; pause() sends SIGSTOP to it and to every backend (each backend is in a
 * session of its own, so a process group would not reach them), which is what a network
 * partition looks like to a client: connections open, nothing answers.
 */
export interface PgServer {
  url: string;
  /** Stops the server: 'fast' (SIGINT: rolls back, closes connections) or 'immediate' (SIGQUIT: like a crash). */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  pause(): void;
  resume(): void;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

/** The newest installed PostgreSQL's bin directory (Debian layout), or null. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')));
  versions.sort((a, b) => Number(a) - Number(b));
  return versions.length > 0 ? path.join(root, versions.at(-1)!, 'bin') : null;
}

/** initdb and postgres refuse to run as root: run them as the `postgres` system user then. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

/** Linux: the processes whose parent is pid (from /proc/<pid>/stat, field 4). */
function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Sends `signal` to `pid`; a process that has just exited (a backend whose connection closed) is no error. */
function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

export async function startPgServer(): Promise<PgServer> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server installed (apt-get install postgresql)');
  const user = serverUser();
  const dir = await mkdtemp(path.join(tmpdir(), 'qrart-pg-'));
  if (user) await chown(dir, user.uid, user.gid);
  const dataDir = path.join(dir, 'data');
  execFileSync(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], { stdio: 'ignore', ...user });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | null = null;

  async function start(): Promise<void> {
    child = spawn(
      path.join(bin!, 'postgres'),
      ['-D', dataDir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
      { stdio: 'ignore', ...user },
    );
    const deadline = Date.now() + 20_000;
    for (;;) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.end();
        return;
      } catch (error) {
        await client.end().catch(() => undefined);
        if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections in 20 s: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  async function stop(mode: 'fast' | 'immediate'): Promise<void> {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    for (const pid of [running.pid!, ...childrenOf(running.pid!)]) signalProcess(pid, 'SIGCONT');
    running.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    await exited;
    child = null;
  }

  await start();
  return {
    url,
    start,
    stop,
    async restart(mode) {
      await stop(mode);
      await start();
    },
    pause() {
      process.kill(child!.pid!, 'SIGSTOP');
      for (const pid of childrenOf(child!.pid!)) signalProcess(pid, 'SIGSTOP');
    },
    resume() {
      for (const pid of childrenOf(child!.pid!)) signalProcess(pid, 'SIGCONT');
      process.kill(child!.pid!, 'SIGCONT');
    },
    async destroy() {
      await stop('immediate');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
