import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

/** The pids of live processes whose command line contains `text` (Linux /proc; a zombie's is empty). */
export async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').join(' ').includes(text)) pids.push(Number(entry));
  }
  return pids;
}

const bin = fileURLToPath(new URL('../../bin/qr-art.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr as they came, interleaved. */
  output: string;
}

/**
 * Kills `child` when the running test ends, however it ends: a test that times out before the
 * child exits would otherwise leave it running after the suite (its own kill timer dies with the
 * test's worker). Call it inside a test.
 */
export function killWhenTestEnds(child: ChildProcess): void {
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
}

/** Runs `qr-art <args>` as a process until it exits by itself (killed after timeoutMs). */
export async function runCliToExit(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; user?: { uid: number; gid: number } } = {},
): Promise<CliRun> {
  const child = spawn(process.execPath, [bin, ...args], { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'], ...options.user });
  killWhenTestEnds(child);
  const run = { stdout: '', stderr: '', output: '' };
  child.stdout.on('data', (chunk) => ((run.stdout += chunk), (run.output += chunk)));
  child.stderr.on('data', (chunk) => ((run.stderr += chunk), (run.output += chunk)));
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(killer);
  return { code, ...run };
}
