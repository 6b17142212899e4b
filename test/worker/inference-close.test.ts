/**
 * Closing the inference client while a run is still inside ONNX Runtime (a job past its deadline
 * is handed back at once, but its run goes on to its next step boundary; a worker told to stop
 * then closes the client). Terminating the thread there aborted the whole process (SIGABRT from a
 * Napi::Error in the dying thread), before the worker closed its NATS connection.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('closing the inference client mid-run', () => {
  it('waits for the aborted run to stop before ending its thread: the process lives on and exits 0', async () => {
    const script = join(import.meta.dirname, 'close-mid-run.script.ts');
    const { code, signal, stdout } = await new Promise<{ code: number | null; signal: string | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ['--import', 'tsx', script], { timeout: 90_000 }, (_error, out) => resolve({ code: child.exitCode, signal: child.signalCode, stdout: out }));
    });
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('run: past its deadline');
    expect(stdout.trim().endsWith('closed')).toBe(true);
  }, 120_000);
});
