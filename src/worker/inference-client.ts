/**
 * The main-thread side of inference: ONNX Runtime's session.run() blocks the JavaScript thread
 * for a whole generation (design notes §3), so the sessions live in a worker_threads worker
 * (inference-thread.ts) and this side only posts requests and receives progress and results.
 * The main thread stays free for NATS heartbeats (msg.working()), health checks and the API.
 *
 * - Requests go to the thread as soon as they are made; it runs them one after another, so the
 *   next job is already waiting there when the current one ends (the device never waits for
 *   this thread to send it).
 * - Abort: the caller's promise rejects at once; the thread stops that request at its next step
 *   boundary, or skips it if it has not started (it reads a shared abort word per request, no
 *   event loop needed). A thread still busy with it after abortGraceMs is terminated and
 *   restarted, but only between session runs (endOverdueRun); a session run that does not
 *   return, or a thread that does not even end when terminated (stuck in native code: a hung
 *   device call), is fatal: onFatal, and the process should exit so its orchestrator replaces it.
 * - Crash: when the thread dies, the request it was running rejects with InferenceCrashError,
 *   requests it had not started are sent again to the fresh thread, which is started at once.
 *   A thread that cannot be started again (the device is gone) is fatal.
 *
 * From source (tsx) the thread needs tsx's loader too; from dist/ it is plain JavaScript
 * (inference-thread-launch.ts).
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
// sharp must be loaded by the main thread before worker threads use it (sharp's docs: keeps
// libvips loaded until every thread is done). The thread resizes with it.
import 'sharp';
import type { Logger } from 'pino';
import type { RawImage } from '../image/raw.ts';
import { loadManifest, type Manifest } from '../pipeline/manifest.ts';
import type { ExecutionProvider } from '../pipeline/providers.ts';
import type { WarmUpSizes } from '../pipeline/warm-up.ts';
import {
  abortWord,
  CONTROL_WORDS,
  CRASH_WORD,
  fromWire,
  InferenceCrashError,
  InferenceInitError,
  InferenceRunError,
  THREAD_ROLE,
  toWire,
  type FromThread,
  type InferencePlan,
  type InferenceResult,
  type OutpaintPlan,
  type ThreadData,
  type ToThread,
} from './inference-protocol.ts';
import { inferenceThreadEntry, relayThreadLog } from './inference-thread-launch.ts';
import { threadStageSeconds } from './job-stages.ts';
import { stopSessionRuns, watchOverdueRun } from './overdue-run.ts';
import type { WorkerMetrics } from './metrics.ts';

/** The package's own manifest (the demo models): src/worker or dist/worker → models/. */
export const DEFAULT_MANIFEST_PATH = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));
/** A restarted thread loads every session again and warms up: minutes on a large model, never this long. */
const DEFAULT_RESTART_TIMEOUT_MS = 10 * 60_000;

export type ProgressListener = (step: number, total: number) => void;
/** Each final image as soon as the thread has it, before the NSFW check (see InferenceResult.nsfw). */
export type ImageListener = (index: number, image: RawImage) => void;

export interface RunOptions {
  readonly signal?: AbortSignal;
  /** The thread began this request (the ones before it are done). */
  readonly onStart?: () => void;
  readonly onProgress?: ProgressListener;
  readonly onImage?: ImageListener;
}

export interface InferenceClientOptions {
  readonly manifestPath: string;
  readonly executionProvider: ExecutionProvider;
  readonly logger: Logger;
  /** CPU threads per ONNX Runtime session (its default: every core). */
  readonly intraOpThreads?: number;
  /** Warm-up sizes (default 'native': each model's native square); false: none. */
  readonly warmUp?: false | WarmUpSizes;
  /** How long an aborted request may keep running before the thread is terminated (default 15 s). */
  readonly abortGraceMs?: number;
  /** How long a terminated thread may take to end before that is fatal (default 10 s). */
  readonly exitGraceMs?: number;
  /**
   * How long a thread restarted after a crash may take to be ready (default 10 min): one that
   * never gets there (a device wedged in session creation or warm-up) would hold the jobs waiting
   * for it, heartbeated, for good. Past it the client fails (onFatal), so they are handed back.
   */
  readonly restartTimeoutMs?: number;
  /** Test hook passed to the thread (pipeline/fault-injection.ts). */
  readonly faultInjection?: string;
  /** The thread cannot be run any more (stuck, or it cannot start again): the process should exit. */
  readonly onFatal?: (error: Error) => void;
  /** Where each generation's stages and session runs, and thread restarts, are recorded. */
  readonly metrics?: WorkerMetrics;
}

export type InferenceState = 'starting' | 'ready' | 'restarting' | 'failed' | 'closed';

interface Pending {
  readonly seq: number;
  readonly message: ToThread;
  readonly options: RunOptions;
  readonly resolve: (r: InferenceResult) => void;
  readonly reject: (e: unknown) => void;
  readonly images: RawImage[];
  /** The thread began it. */
  started: boolean;
  /** The caller has been answered (result, error or its own abort). */
  settled: boolean;
  /** The thread holding it (a restarted thread gets unstarted requests again). */
  thread: Thread | undefined;
}

interface Thread {
  readonly worker: Worker;
  readonly control: Int32Array;
  /** Resolves with the provider in use once sessions are ready. */
  readonly ready: Promise<ExecutionProvider>;
  /** Last uncaught error reported by the thread. */
  lastError?: Error;
  isReady: boolean;
  exited: boolean;
  /** Terminated on purpose (abort grace), waiting for it to end. */
  terminating?: NodeJS.Timeout;
}

export class InferenceClient {
  private thread: Thread | undefined;
  private starting: Promise<Thread> | undefined;
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  private closed = false;
  private stateNow: InferenceState = 'starting';
  private providerInUse: ExecutionProvider;

  private constructor(
    private readonly options: InferenceClientOptions,
    readonly manifest: Manifest,
  ) {
    this.providerInUse = options.executionProvider;
  }

  /** Loads the manifest here (the runner reads its defaults), starts the thread and waits for its sessions. */
  static async start(options: InferenceClientOptions): Promise<InferenceClient> {
    const manifest = await loadManifest(options.manifestPath);
    const client = new InferenceClient(options, manifest);
    try {
      await client.ensureThread();
    } catch (err) {
      await client.close();
      throw err;
    }
    return client;
  }

  /** The provider the thread actually uses (cpu only where the operator allowed the fallback). */
  get provider(): ExecutionProvider {
    return this.providerInUse;
  }

  /** ready: sessions loaded and serving; restarting: after a crash or a stuck request; failed: cannot serve again. */
  get state(): InferenceState {
    return this.stateNow;
  }

  /**
   * Whether a request sent now would start soon: the thread is ready and not still running one
   * its caller gave up (an abort it has not reached, a hung run about to be terminated and the
   * thread restarted). While false, a worker should take no new job: it would wait here, held
   * from workers that could run it.
   */
  get accepting(): boolean {
    return this.stateNow === 'ready' && ![...this.pending.values()].some((p) => p.settled && p.started);
  }

  /** Requests the thread holds or will get (running, queued, or waiting for a restarted thread). */
  get inFlight(): number {
    return [...this.pending.values()].filter((p) => !p.settled).length;
  }

  /** Runs one QR generation in the thread. Rejects at once when `signal` aborts. */
  run(plan: InferencePlan, options: RunOptions = {}): Promise<InferenceResult> {
    // Copied, not transferred: the caller keeps its control image, and a request a dying thread
    // had not started can be sent again.
    const { wire } = toWire(plan.control);
    return this.request((seq) => ({ type: 'run', seq, plan: { ...plan, control: wire } }), options);
  }

  /** Runs one outpainting in the thread (one image out). Rejects at once when `signal` aborts. */
  outpaint(plan: OutpaintPlan, options: RunOptions = {}): Promise<InferenceResult> {
    const { wire } = toWire(plan.image);
    return this.request((seq) => ({ type: 'outpaint', seq, plan: { ...plan, image: wire } }), options);
  }

  private request(message: (seq: number) => ToThread, options: RunOptions): Promise<InferenceResult> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.reject(new Error('the inference client is closed'));
    if (this.stateNow === 'failed') return Promise.reject(new InferenceCrashError('the inference thread cannot run (it failed to start again)'));
    const seq = ++this.seq;
    return new Promise<InferenceResult>((resolve, reject) => {
      const p: Pending = {
        seq,
        message: message(seq),
        options,
        images: [],
        started: false,
        settled: false,
        thread: undefined,
        resolve: (r) => {
          if (!p.settled) (p.settled = true), resolve(r);
        },
        reject: (e) => {
          if (!p.settled) (p.settled = true), reject(e);
        },
      };
      this.pending.set(seq, p);
      signal?.addEventListener('abort', () => this.abort(p, signal.reason), { once: true });
      this.ensureThread().then(
        (thread) => this.send(p, thread),
        (err) => {
          this.pending.delete(seq);
          p.reject(err);
        },
      );
    });
  }

  private send(p: Pending, thread: Thread): void {
    if (p.thread || !this.pending.has(p.seq)) return;
    if (thread.exited) return; // the exit handler re-sends it to the next thread
    p.thread = thread;
    thread.worker.postMessage(p.message);
    this.options.logger.debug({ seq: p.seq }, 'request sent to the inference thread');
  }

  private abort(p: Pending, reason: unknown): void {
    p.reject(reason);
    const thread = p.thread;
    if (!thread) {
      this.pending.delete(p.seq);
      return;
    }
    Atomics.store(thread.control, abortWord(p.seq), p.seq);
    const grace = this.options.abortGraceMs ?? 15_000;
    setTimeout(() => void this.endOverdueRun(p, thread, grace), grace).unref();
  }

  /**
   * A request still running `graceMs` after its abort (overdue-run.ts): between session runs the
   * thread is terminated and restarted; a session run inside ONNX Runtime is waited for, and one
   * that does not return within exitGraceMs is a hung device call: fatal.
   */
  private async endOverdueRun(p: Pending, thread: Thread, graceMs: number): Promise<void> {
    const waitMs = this.options.exitGraceMs ?? 10_000;
    const running = (): boolean => p.started && this.pending.has(p.seq) && this.thread === thread && !thread.exited;
    const verdict = await watchOverdueRun(thread.control, running, waitMs, () =>
      this.options.logger.warn({ seq: p.seq, graceMs }, 'an aborted request is still running inside ONNX Runtime; waiting for it to stop'),
    );
    if (verdict === 'hung') {
      this.fail(new InferenceCrashError(`a session run did not return from ONNX Runtime within ${waitMs} ms, after its request was aborted (a hung device call?)`));
    } else if (verdict === 'between-runs') {
      this.options.logger.warn({ seq: p.seq, graceMs }, 'inference thread did not stop after an abort; terminating it');
      this.terminate(thread);
    }
  }

  /** Terminates a thread; one that does not end within exitGraceMs is stuck in native code: fatal. */
  private terminate(thread: Thread): void {
    const grace = this.options.exitGraceMs ?? 10_000;
    void stopSessionRuns(thread.control, () => thread.exited, grace).then(() => {
      if (thread.exited) return;
      thread.terminating = setTimeout(() => {
        if (thread.exited) return;
        this.fail(new InferenceCrashError(`the inference thread did not end within ${grace} ms of being terminated (stuck in a native call: a hung device?)`));
      }, grace);
      thread.terminating.unref();
      void thread.worker.terminate();
    });
  }

  private fail(error: Error): void {
    if (this.stateNow === 'failed' || this.closed) return;
    this.stateNow = 'failed';
    this.options.logger.fatal({ err: error }, 'inference cannot continue');
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
    this.options.onFatal?.(error);
  }

  /** The running thread, starting one when there is none (after a crash, or on first use). */
  private ensureThread(): Promise<Thread> {
    const thread = this.thread;
    if (thread && !thread.exited) return thread.ready.then(() => thread);
    this.starting ??= this.spawn().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async spawn(): Promise<Thread> {
    const { script, eval: isEval } = inferenceThreadEntry();
    const control = new SharedArrayBuffer(4 * CONTROL_WORDS);
    const data: ThreadData = {
      role: THREAD_ROLE,
      manifestPath: this.options.manifestPath,
      executionProvider: this.options.executionProvider,
      ...(this.options.intraOpThreads !== undefined ? { intraOpThreads: this.options.intraOpThreads } : {}),
      warmUp: this.options.warmUp ?? 'native',
      logLevel: this.options.logger.level,
      ...(this.options.faultInjection ? { faultInjection: this.options.faultInjection } : {}),
      control,
    };
    const worker = new Worker(script, { eval: isEval, workerData: data, stdout: false, stderr: false });
    let onReady!: (p: ExecutionProvider) => void;
    let onFail!: (e: Error) => void;
    const ready = new Promise<ExecutionProvider>((resolve, reject) => ((onReady = resolve), (onFail = reject)));
    ready.catch(() => undefined); // observed by ensureThread's caller; never unhandled here
    const thread: Thread = { worker, control: new Int32Array(control), ready, isReady: false, exited: false };
    this.thread = thread;
    const started = performance.now();

    worker.on('message', (msg: FromThread) => this.onMessage(thread, msg, onReady, onFail));
    worker.on('error', (err) => {
      thread.lastError = err;
      this.options.logger.error({ err }, 'inference thread error');
    });
    worker.on('exit', (code) => this.onExit(thread, code, onFail));

    const provider = await ready;
    this.providerInUse = provider;
    if (!this.closed && this.stateNow !== 'failed') this.stateNow = 'ready';
    this.options.logger.info({ provider: provider.provider, ms: Math.round(performance.now() - started) }, 'inference thread ready');
    // Requests made while it started (or left unstarted by a thread that died) go to it now.
    for (const p of this.pending.values()) if (!p.thread) this.send(p, thread);
    return thread;
  }

  private onExit(thread: Thread, code: number, onFail: (e: Error) => void): void {
    thread.exited = true;
    clearTimeout(thread.terminating);
    if (this.thread === thread) this.thread = undefined;
    const why = thread.lastError ? `${thread.lastError.name}: ${thread.lastError.message}` : `exit code ${code}`;
    if (!thread.isReady) onFail(thread.lastError instanceof InferenceInitError ? thread.lastError : new InferenceCrashError(`inference thread died while starting (${why})`));
    // The request it was running is lost; the ones it had not started go to the next thread.
    for (const p of [...this.pending.values()]) {
      if (p.thread !== thread) continue;
      // Aborted while it waited in the dead thread: the abort lived there; do not run it on the next one.
      if (p.settled && !p.started) {
        this.pending.delete(p.seq);
        continue;
      }
      if (p.started || this.closed) {
        this.pending.delete(p.seq);
        p.reject(this.closed ? new Error('the inference client was closed during the generation') : new InferenceCrashError(`inference thread died during a generation (${why}); it is restarted for the next job`));
      } else {
        p.thread = undefined;
      }
    }
    if (this.closed || this.stateNow === 'failed') return;
    if (!thread.isReady) return; // a start that failed: the caller of ensureThread has the error
    this.options.logger.error({ code, err: thread.lastError }, 'inference thread exited; restarting it');
    this.options.metrics?.threadRestarted();
    this.stateNow = 'restarting';
    // Restart now so the next job finds sessions ready; a thread that cannot start again, or not in time, is fatal.
    const limit = this.options.restartTimeoutMs ?? DEFAULT_RESTART_TIMEOUT_MS;
    const overdue = setTimeout(() => {
      const fresh = this.thread;
      this.fail(new InferenceCrashError(`the inference thread was not ready again within ${limit} ms of its restart (a device that hangs in session creation or warm-up?)`));
      if (fresh && !fresh.exited) this.terminate(fresh);
    }, limit);
    overdue.unref();
    this.ensureThread().then(
      () => clearTimeout(overdue),
      (err: Error) => {
        clearTimeout(overdue);
        this.fail(new InferenceCrashError(`the inference thread cannot be started again: ${err.message}`));
      },
    );
  }

  private onMessage(thread: Thread, msg: FromThread, onReady: (p: ExecutionProvider) => void, onFail: (e: Error) => void): void {
    switch (msg.type) {
      case 'log':
        relayThreadLog(this.options.logger, msg.line);
        return;
      case 'ready':
        thread.isReady = true;
        onReady(msg.provider);
        return;
      case 'init-error':
        thread.lastError = new InferenceInitError(msg.message);
        onFail(thread.lastError);
        void thread.worker.terminate();
        return;
    }
    const p = this.pending.get(msg.seq);
    if (!p || p.thread !== thread) return;
    switch (msg.type) {
      case 'started':
        p.started = true;
        if (!p.settled) p.options.onStart?.();
        return;
      case 'progress':
        if (!p.settled) p.options.onProgress?.(msg.step, msg.total);
        return;
      case 'image': {
        if (p.settled) return;
        const image = fromWire(msg.image);
        p.images[msg.index] = image;
        p.options.onImage?.(msg.index, image);
        return;
      }
      case 'result':
        this.pending.delete(p.seq);
        if (p.images.length !== msg.nsfw.length || msg.nsfw.some((_, i) => !p.images[i])) {
          p.reject(new InferenceCrashError(`inference thread sent ${p.images.filter(Boolean).length} of ${msg.nsfw.length} images`));
        } else {
          // Every generation passes here, QR art and outpainting alike: its thread-side stages are recorded once, here.
          this.options.metrics?.stages(threadStageSeconds(msg.timings));
          this.options.metrics?.onnxRuns(msg.onnxRuns);
          p.resolve({ images: p.images, nsfw: msg.nsfw, timings: msg.timings, generated: msg.generated, span: msg.span, onnxRuns: msg.onnxRuns, ...(msg.caption !== undefined ? { caption: msg.caption } : {}) });
        }
        return;
      case 'failed':
        this.pending.delete(p.seq);
        p.reject(new InferenceRunError(msg.name, msg.message, msg.fault));
        return;
      case 'aborted':
        this.pending.delete(p.seq);
        p.reject(new Error('generation aborted'));
        return;
    }
  }

  /**
   * Fault drill (tests, operators checking recovery): the thread exits at its next step
   * boundary, as if it had crashed mid-generation.
   */
  crashForDrill(): void {
    if (this.thread) Atomics.store(this.thread.control, CRASH_WORD, 1);
  }

  /**
   * Stops the thread. A run still in it (one past its deadline, handed back but not yet at its
   * next step boundary) is told to stop and given abortGraceMs to end first: a thread terminated
   * inside ONNX Runtime's session.run takes the whole process down (onnxruntime-node throws a
   * Napi::Error in the dying thread: SIGABRT), before the worker has closed its NATS connection.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.stateNow = 'closed';
    const thread = this.thread ?? (await this.starting?.catch(() => undefined));
    this.thread = undefined;
    if (thread && !thread.exited) {
      const graceMs = this.options.abortGraceMs ?? 15_000;
      // Its requests are aborted and it starts no more session runs; the one in flight (a job's,
      // or a warm-up's in a thread restarting as the worker stops) is waited for.
      for (const p of this.pending.values()) if (p.thread === thread) Atomics.store(thread.control, abortWord(p.seq), p.seq);
      if (!(await stopSessionRuns(thread.control, () => thread.exited, graceMs))) {
        this.options.logger.warn({ graceMs }, 'a session run did not return within the abort grace; terminating the inference thread under it');
      }
      await thread.worker.terminate();
    }
    for (const p of this.pending.values()) p.reject(new Error('the inference client was closed'));
    this.pending.clear();
  }
}
