import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { lockDir } from '../util/dir-lock.ts';
import { forgetServerPid, recordServerPid, stopLeftoverServer } from './leftover-server.ts';

export interface LocalNats {
  url: string;
  monitorUrl: string;
  /**
   * Settles, with how it ended, if the server exits while nobody stopped it (the OOM killer, a
   * crash): everything here depends on it, so the caller should say so and stop. Never settles otherwise.
   */
  unexpectedExit: Promise<string>;
  stop(): Promise<void>;
  /** Ends the server at once, without waiting: for a process about to die of a signal. */
  kill(): void;
}

export class NatsServerMissingError extends Error {
  constructor(binary: string) {
    super(
      `'${binary}' was not found. The one-machine setup runs a local NATS server with JetStream.\n` +
        '  Debian/Ubuntu:  sudo apt-get install -y nats-server\n' +
        '  macOS:          brew install nats-server\n' +
        '  or point NATS_URL at an existing server (JetStream enabled), or set NATS_SERVER_BIN to the binary.',
    );
  }
}

/**
 * 'nats-server' from PATH, else Debian's package's path: it installs the binary in /usr/sbin,
 * which a normal user's PATH leaves out (the quick start's `apt-get install -y nats-server`
 * would otherwise be answered "not found, install nats-server").
 */
export function natsServerBinary(): string {
  const onPath = (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, 'nats-server')));
  return !onPath && existsSync(DEBIAN_BINARY) ? DEBIAN_BINARY : 'nats-server';
}

const DEBIAN_BINARY = '/usr/sbin/nats-server';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Tries at most this many port pairs when a chosen port is taken before the server binds it. */
const PORT_ATTEMPTS = 5;

/**
 * Runs `nats-server -js` on loopback with its store under storeDir; resolves when it
 * accepts clients. Ports are free ones unless given (a restart on the same port and store
 * is how clients, which reconnect to the URL they know, find it again). A free port is only
 * free when it is picked: another process (a parallel test's server) can bind it before this
 * server does, so on "address already in use" the ports picked here are picked again; a port
 * the caller gave is never changed.
 */
export async function startLocalNats(
  storeDir: string,
  options: {
    port?: number;
    binary?: string;
    pickPort?: () => Promise<number>;
    onLockWait?: () => void;
    /** Called with the pid of a server that a killed start left running on this store, once it is stopped. */
    onLeftoverStopped?: (pid: number) => void;
    /** The store lock's stale time (dir-lock's default unless given). */
    lockStaleMs?: number;
  } = {},
): Promise<LocalNats> {
  const binary = options.binary || process.env.NATS_SERVER_BIN || natsServerBinary();
  const pickPort = options.pickPort ?? freePort;
  await mkdir(storeDir, { recursive: true });
  // nats-server does not lock its store: two servers on one directory would both write it.
  const unlock = await lockDir(storeDir, {
    what: 'the local NATS store',
    ...(options.onLockWait ? { onWait: options.onLockWait } : {}),
    ...(options.lockStaleMs ? { staleMs: options.lockStaleMs } : {}),
  });
  const pidFile = path.join(storeDir, PID_FILE);
  try {
    const leftover = await stopLeftoverServer(pidFile, ['-sd', path.resolve(storeDir)]);
    if (leftover !== undefined) options.onLeftoverStopped?.(leftover);
  } catch (error) {
    await unlock();
    throw error;
  }
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await pickPort());
    const monitorPort = await pickPort();
    try {
      const nats = await spawnNats(binary, storeDir, port, monitorPort, pidFile);
      return { ...nats, stop: () => nats.stop().finally(unlock) };
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) {
        await unlock();
        throw error;
      }
    }
  }
}

class PortTakenError extends Error {}

/**
 * The local nats-server stopped or stalled before it was ready (a store it cannot use, a
 * binary that is not nats-server): said in one line with the server's own reason, not a stack.
 */
export class LocalNatsStartError extends Error {}

/** The server's reason in its log: its fatal or error lines, else its last line. */
function natsReason(log: string): string {
  const lines = log.split('\n').map((line) => line.trim()).filter(Boolean);
  const told = lines.filter((line) => /\[(FTL|ERR)\]/.test(line));
  return (told.length > 0 ? told : lines.slice(-1)).map((line) => line.replace(/^.*?\[(FTL|ERR)\]\s*/, '')).join('; ') || 'it printed nothing';
}

/** How to stop each server this process spawned and that still runs. */
const spawned = new Set<() => void>();

/**
 * Stops every server this process spawned, even one still starting up: for a process about to
 * die of a signal, which runs no 'exit' listeners.
 */
export function killLocalServers(): void {
  for (const kill of spawned) kill();
}

/** The running server's pid, in its store: what the next start stops if this process is killed. */
const PID_FILE = 'nats-server.pid';

async function spawnNats(binary: string, storeDir: string, port: number, monitorPort: number, pidFile: string): Promise<LocalNats> {
  const child: ChildProcess = spawn(
    binary,
    ['-js', '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-sd', path.resolve(storeDir)],
    // Its own process group (and session): a Ctrl-C in the terminal signals the whole foreground
    // group, and the server must outlive it, because the worker finishes its jobs in hand
    // (publishing their images and results here) before this process stops the server, last.
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  // The server is this process's child: it goes when the process goes, however the process ends
  // (an uncaught error at start-up included), never left running on its own. SIGKILL ends this
  // process without an 'exit': the pid file lets the next start stop the server then.
  const pidRecorded = child.pid === undefined ? Promise.resolve() : recordServerPid(pidFile, child.pid);
  const killOnExit = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', killOnExit);
  spawned.add(killOnExit);
  child.once('exit', () => {
    process.removeListener('exit', killOnExit);
    spawned.delete(killOnExit);
  });
  let log = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('Server is ready')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'ENOENT' ? new NatsServerMissingError(binary) : error));
    // 'close', not 'exit': the output is complete then, its last line the reason.
    child.once('close', (code, signal) => {
      if (/address already in use/.test(log)) return reject(new PortTakenError(`nats-server exited with code ${code}:\n${log.slice(-2000)}`));
      reject(new LocalNatsStartError(`the local nats-server (${binary}) stopped at start (${signal ?? `exit ${code}`}): ${natsReason(log)}; its store is ${storeDir}`));
    });
    setTimeout(() => reject(new LocalNatsStartError(`the local nats-server (${binary}) was not ready after 20 s: ${natsReason(log)}`)), 20_000).unref();
  });
  try {
    await Promise.all([ready, pidRecorded]);
  } catch (error) {
    // One that never became ready is not left holding the store (or a port).
    if (child.exitCode === null) child.kill('SIGKILL');
    await forgetServerPid(pidFile);
    throw error;
  }
  let stopping = false;
  const unexpectedExit = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      if (!stopping) resolve(signal ? `killed by ${signal}` : `exited with code ${code}`);
    }),
  );
  return {
    url: `nats://127.0.0.1:${port}`,
    monitorUrl: `http://127.0.0.1:${monitorPort}`,
    unexpectedExit,
    kill: () => {
      stopping = true;
      killOnExit();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        const forgotten = () => void forgetServerPid(pidFile).finally(resolve);
        // Ended already, by an exit or a signal (the OOM killer's SIGKILL sets signalCode, not exitCode).
        if (child.exitCode !== null || child.signalCode !== null) return forgotten();
        child.once('exit', forgotten);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
