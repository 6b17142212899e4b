/**
 * Per-job deadlines. A run that hangs (a stalled kernel, a device that stopped answering) must
 * not hold its job forever while heartbeats keep it alive: the deadline aborts it, the job is
 * handed back, and after MaxDeliver attempts it fails with a refund.
 *
 * JOB_TIMEOUT_MS fixes it; unset, it is derived from the work:
 *   60 s + 2 s × denoising steps × images × max(1, output pixels / native pixels)
 * (face pass steps counted too). That is generous on a GPU (an SD1.5 step at 768² takes tens of
 * milliseconds on a data-centre card, about a second on a small one) and bounds a hang at
 * minutes. CPU workers with real weights are far slower: set JOB_TIMEOUT_MS there.
 * The clock starts when the inference thread starts the job, not while it waits its turn.
 */
import { asJobError, JobDeadlineError, type RunHooks } from './runner.ts';

export interface DeadlineSettings {
  /** JOB_TIMEOUT_MS: the same deadline for every job. */
  readonly fixedMs?: number;
}

export const DEADLINE_BASE_MS = 60_000;
export const DEADLINE_PER_STEP_MS = 2_000;

/** The deadline of a generation of `steps` steps and `batchSize` images of width × height. */
export function deadlineFor(work: { steps: number; batchSize: number; width: number; height: number; enhanceFace?: boolean }, nativeSize: number, settings: DeadlineSettings = {}): number {
  if (settings.fixedMs !== undefined) return settings.fixedMs;
  const area = Math.max(1, (work.width * work.height) / (nativeSize * nativeSize));
  const steps = work.steps * (work.enhanceFace ? 2 : 1);
  return Math.round(DEADLINE_BASE_MS + DEADLINE_PER_STEP_MS * steps * work.batchSize * area);
}

interface Deadline {
  /** Aborts when the caller's signal does or when the deadline passes. */
  readonly signal: AbortSignal;
  /** Starts the clock (when the job starts running). */
  start(): void;
  clear(): void;
  /** The error to report: a JobDeadlineError when the deadline is what stopped the run. */
  explain(error: unknown): unknown;
}

function withDeadline(parent: AbortSignal, ms: number): Deadline {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let expired: JobDeadlineError | undefined;
  const onParent = (): void => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    start() {
      timer ??= setTimeout(() => {
        expired = new JobDeadlineError(`the generation ran past its deadline of ${Math.round(ms / 1000)} s (JOB_TIMEOUT_MS)`);
        controller.abort(expired);
      }, ms);
    },
    clear() {
      clearTimeout(timer);
      parent.removeEventListener('abort', onParent);
    },
    explain: (error) => expired ?? error,
  };
}

/**
 * One request to the inference thread under a deadline that starts with the request itself
 * (`run` gets the signal to pass on and the onStart to call); the daemon's onStart and
 * onDeviceDone are called on the way; a failure comes out as what it means for the job
 * (asJobError, or JobDeadlineError when the deadline stopped it).
 */
export async function underDeadline<T>(ms: number, hooks: Partial<RunHooks>, run: (signal: AbortSignal, onStart: () => void) => Promise<T>): Promise<T> {
  const deadline = withDeadline(hooks.signal ?? new AbortController().signal, ms);
  try {
    const result = await run(deadline.signal, () => {
      deadline.start();
      hooks.onStart?.();
    });
    hooks.onDeviceDone?.();
    return result;
  } catch (error) {
    throw deadline.explain(asJobError(error));
  } finally {
    deadline.clear();
  }
}
