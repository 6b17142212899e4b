/**
 * What became of a request still running after its abort, read from the inference thread's
 * shared words (inference-protocol.ts): it stopped; it sits between session runs (a loop in our
 * own code: the thread may be terminated); or one session run has not returned from ONNX Runtime
 * for `hungAfterMs` (a hung device call). A thread is never terminated while a run is inside ONNX
 * Runtime: onnxruntime-node then throws a Napi::Error in the dying thread, aborting the process.
 */
import { IN_ONNX_RUNTIME_WORD, ONNX_RUNS_WORD, STOP_RUNS_WORD } from './inference-protocol.ts';

export type OverdueVerdict = 'stopped' | 'between-runs' | 'hung';

/** How long a request may stay between session runs after its abort before that counts. */
export const BETWEEN_RUNS_GRACE_MS = 1000;
const POLL_MS = 50;

export const insideOnnxRuntime = (control: Int32Array): boolean => Atomics.load(control, IN_ONNX_RUNTIME_WORD) > 0;

/** Watches until `running()` turns false ('stopped') or a verdict is reached; `onWaiting` is told once when a run inside ONNX Runtime is waited for. */
export async function watchOverdueRun(control: Int32Array, running: () => boolean, hungAfterMs: number, onWaiting: () => void): Promise<OverdueVerdict> {
  let run = { id: Number.NaN, since: 0 };
  let outSince: number | undefined;
  let told = false;
  while (running()) {
    const now = performance.now();
    if (insideOnnxRuntime(control)) {
      outSince = undefined;
      const id = Atomics.load(control, ONNX_RUNS_WORD);
      if (id !== run.id) run = { id, since: now };
      if (!told) (told = true), onWaiting();
      if (now - run.since > hungAfterMs) return 'hung';
    } else {
      // Its step boundary comes now, unless the thread is stuck in our own code.
      outSince ??= now;
      if (now - outSince >= BETWEEN_RUNS_GRACE_MS) return 'between-runs';
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return 'stopped';
}

/**
 * Before a thread is terminated: it starts no more session runs, and the one in flight (a job's,
 * a warm-up's) is waited for, at most `graceMs`. False when one is still inside ONNX Runtime
 * then (hung: terminating cannot make it worse, since a run that never returns never calls back).
 */
export async function stopSessionRuns(control: Int32Array, exited: () => boolean, graceMs: number): Promise<boolean> {
  Atomics.store(control, STOP_RUNS_WORD, 1);
  const until = performance.now() + graceMs;
  while (!exited() && insideOnnxRuntime(control)) {
    if (performance.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS / 5));
  }
  return true;
}
