/**
 * An inference thread is never terminated while a run is inside ONNX Runtime: that aborts the
 * whole process (SIGABRT from a Napi::Error in the dying thread) once the run returns, before the
 * worker has handed anything back or closed NATS. Two ways it happened: a worker closing its
 * client while a job past its deadline still ran its step, and an abort grace that ran out inside
 * a long step. Each runs in a process of its own (close-mid-run.script.ts).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

function runScript(mode: 'close' | 'overdue' | 'warm-up'): Promise<{ code: number | null; signal: string | null; stdout: string }> {
  const script = join(import.meta.dirname, 'close-mid-run.script.ts');
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', script, mode], { timeout: 90_000 }, (_error, stdout) => resolve({ code: child.exitCode, signal: child.signalCode, stdout }));
  });
}

describe('an aborted run still inside ONNX Runtime', () => {
  it('closing the client waits for it to stop before ending the thread: the process lives on and exits 0', async () => {
    const { code, signal, stdout } = await runScript('close');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('run: past its deadline');
    expect(stdout.trim().endsWith('done')).toBe(true);
  }, 120_000);

  it('an abort grace that runs out inside a step waits for the step instead of terminating the thread: the next run is served', async () => {
    const { code, signal, stdout } = await runScript('overdue');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('run: past its deadline');
    expect(stdout).toContain('next run: 2 images, thread ready');
    expect(stdout.trim().endsWith('done')).toBe(true);
  }, 120_000);

  it('closing the client while a restarted thread warms up waits for the warm-up\'s run: the process exits 0', async () => {
    const { code, signal, stdout } = await runScript('warm-up');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('run: InferenceCrashError');
    expect(stdout.trim().endsWith('done')).toBe(true);
  }, 120_000);
});
