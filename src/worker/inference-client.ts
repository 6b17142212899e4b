/**
 * The main-thread side of inference: ONNX Runtime's session.run() blocks the JavaScript thread
 * for a whole generation (design notes §3), so the sessions live in a worker_threads worker
 * (inference-thread.ts) and this side only posts requests and receives progress and results.
 * The main thread stays free for NATS heartbeats (msg.working()), health checks and the API.
 *
 * - One request at a time: later calls wait their turn (the thread holds one set of sessions).
 * - Abort: the caller's promise rejects at once; the thread stops at its next step boundary
 *   (it reads a shared abort word, no event loop needed) and the next request waits for that.
 *   A thread that has not stopped after abortGraceMs is terminated and restarted.
 * - Crash: a thread that dies (uncaught error, OOM, exit) rejects the request in hand with an
 *   InferenceCrashError and is restarted at once, so the next request runs on a fresh one.
 *
 * From source (tsx) the thread needs tsx's loader too; from dist/ it is plain JavaScript.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
// sharp must be loaded by the main thread before worker threads use it (sharp's docs: keeps
// libvips loaded until every thread is done). The thread resizes with it.
import 'sharp';
import type { Logger } from 'pino';
import type { RawImage } from '../image/raw.ts';
import { loadManifest, type Manifest } from '../pipeline/manifest.ts';
import type { ExecutionProvider } from '../pipeline/sessions.ts';
import type { OutpaintRequest } from '../pipeline/outpaint.ts';
import type { Txt2ImgRequest } from '../pipeline/txt2img.ts';
import type { V5Model } from '../workflows/catalogue.ts';
import type { QrWorkflowName } from '../workflows/names.ts';
import { JobInputError } from './runner.ts';

/** The package's own manifest (the demo models): src/worker or dist/worker → models/. */
export const DEFAULT_MANIFEST_PATH = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));

// ---------------------------------------------------------------------------------------------
// What crosses the thread boundary (structured clone; pixel buffers are transferred)

/**
 * Everything one generation needs, resolved (defaults applied) by the runner: txt2img's request
 * (the thread fills in the manifest's scheduler config, native size and refine settings) plus
 * which workflow and model run it.
 */
export interface InferencePlan extends Omit<Txt2ImgRequest, 'schedulerConfig' | 'nativeSize' | 'refine'> {
  readonly workflow: QrWorkflowName;
  /** v5 / v5s: the request's `model`. */
  readonly v5Model?: V5Model;
  /** enhance = face: the refinement pass of pipeline/face-pass.ts. */
  readonly enhanceFace?: boolean;
}

/** An outpainting run: outpaint.ts's request minus the bench's tuning knobs (the manifest decides). */
export type OutpaintPlan = Omit<OutpaintRequest, 'tuning'>;

export interface InferenceResult {
  /** RGB, exactly width × height, image i from seed + i (outpainting: the one extended image). */
  readonly images: RawImage[];
  /** One flag per image (all false when the manifest has no safety checker). */
  readonly nsfw: boolean[];
  /** Milliseconds per stage inside the thread (txt2img stages, face, nsfw, total). */
  readonly timings: Record<string, number>;
  readonly generated: { readonly width: number; readonly height: number };
  /** Outpainting without a prompt: the captioner's text, used as the prompt. */
  readonly caption?: string;
}

export type ProgressListener = (step: number, total: number) => void;
/** Each final image as soon as the thread has it, before the NSFW check (see InferenceResult.nsfw). */
export type ImageListener = (index: number, image: RawImage) => void;

export interface RunOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: ProgressListener;
  readonly onImage?: ImageListener;
}

/** Options the thread is started with (workerData). */
export const THREAD_ROLE = 'qr-art-inference';

export interface ThreadData {
  /** Marks the worker as ours (the thread module runs only when started with it). */
  readonly role: typeof THREAD_ROLE;
  readonly manifestPath: string;
  readonly executionProvider: ExecutionProvider;
  readonly intraOpThreads?: number;
  readonly warmUp: boolean;
  readonly logLevel: string;
  /** Int32Array words: [ABORT_WORD] = seq of the request to stop, [CRASH_WORD] = 1 to die (fault drill). */
  readonly control: SharedArrayBuffer;
}

export const ABORT_WORD = 0;
export const CRASH_WORD = 1;
/** Exit code of a thread told to die by the fault drill. */
export const DRILL_EXIT_CODE = 70;

type WireImage = { data: ArrayBuffer; width: number; height: number; channels: RawImage['channels'] };
export type ToThread =
  | { type: 'run'; seq: number; plan: Omit<InferencePlan, 'control'> & { control: WireImage } }
  | { type: 'outpaint'; seq: number; plan: Omit<OutpaintPlan, 'image'> & { image: WireImage } };
export type FromThread =
  | { type: 'ready'; provider: ExecutionProvider; ms: number }
  | { type: 'init-error'; name: string; message: string }
  | { type: 'log'; line: string }
  | { type: 'progress'; seq: number; step: number; total: number }
  /** Image `index` of the request, final, sent before the NSFW check (every index once, before 'result'). */
  | { type: 'image'; seq: number; index: number; image: WireImage }
  | { type: 'result'; seq: number; nsfw: boolean[]; timings: Record<string, number>; generated: { width: number; height: number }; caption?: string }
  | { type: 'failed'; seq: number; name: string; message: string }
  | { type: 'aborted'; seq: number };

/** An image as a transferable message part: its own whole ArrayBuffer (copied when it shares one). */
export function toWire(image: RawImage): { wire: WireImage; transfer: ArrayBuffer } {
  const { data } = image;
  const own = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer;
  const buffer = own ? (data.buffer as ArrayBuffer) : (data.slice().buffer as ArrayBuffer);
  return { wire: { data: buffer, width: image.width, height: image.height, channels: image.channels }, transfer: buffer };
}

export function fromWire(wire: WireImage): RawImage {
  return { data: new Uint8Array(wire.data), width: wire.width, height: wire.height, channels: wire.channels };
}

// ---------------------------------------------------------------------------------------------
// Errors

/** The thread died while running a request (or while starting). Transient: retry the job. */
export class InferenceCrashError extends Error {
  override readonly name = 'InferenceCrashError';
}

/** The thread could not load the manifest or create its sessions. */
export class InferenceInitError extends Error {
  override readonly name = 'InferenceInitError';
}

/**
 * `error`, or a JobInputError when the pipeline refused the request itself (its range checks
 * throw RangeError): retrying cannot help, so the job fails (refunded) instead of being handed back.
 */
export function asJobError(error: unknown): unknown {
  return error instanceof InferenceRunError && error.causeName === 'RangeError' ? new JobInputError(error.message) : error;
}

/** The generation itself threw inside the thread (name and message as thrown there). */
export class InferenceRunError extends Error {
  override readonly name = 'InferenceRunError';
  constructor(
    readonly causeName: string,
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// The client

export interface InferenceClientOptions {
  readonly manifestPath: string;
  readonly executionProvider: ExecutionProvider;
  readonly logger: Logger;
  /** CPU threads per ONNX Runtime session (its default: every core). */
  readonly intraOpThreads?: number;
  /** Run every graph once at start (default true). */
  readonly warmUp?: boolean;
  /** How long an aborted request may keep the thread before it is terminated (default 30 s). */
  readonly abortGraceMs?: number;
}

interface Pending {
  readonly seq: number;
  readonly resolve: (r: InferenceResult) => void;
  readonly reject: (e: unknown) => void;
  readonly onProgress: ProgressListener | undefined;
  readonly onImage: ImageListener | undefined;
  readonly images: RawImage[];
  /** The caller has been answered (result, error or its own abort). */
  settled: boolean;
  /** Frees the thread for the next request. */
  readonly release: () => void;
}

interface Thread {
  readonly worker: Worker;
  readonly control: Int32Array;
  /** Resolves with the provider in use once sessions are ready. */
  readonly ready: Promise<ExecutionProvider>;
  /** Last uncaught error reported by the thread. */
  lastError?: Error;
  exited: boolean;
}

const LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** The worker script and its options: the .ts file through tsx from source, the .js file from dist/. */
function threadEntry(): { script: string | URL; eval: boolean } {
  const fromSource = import.meta.url.endsWith('.ts');
  if (!fromSource) return { script: new URL('./inference-thread.js', import.meta.url), eval: false };
  // Node 20 does not apply `--import` loaders to a worker's entry module, so the thread
  // registers tsx itself before importing its TypeScript entry.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./inference-thread.ts', import.meta.url).href;
  return {
    script: `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    eval: true,
  };
}

export class InferenceClient {
  private thread: Thread | undefined;
  private starting: Promise<Thread> | undefined;
  private pending: Pending | undefined;
  /** Settles when the thread is free for the next request. */
  private turn: Promise<void> = Promise.resolve();
  private seq = 0;
  private closed = false;
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

  /** The provider the thread actually uses (cpu after a CUDA fallback). */
  get provider(): ExecutionProvider {
    return this.providerInUse;
  }

  /** Runs one QR generation in the thread. Rejects at once when `signal` aborts. */
  run(plan: InferencePlan, options: RunOptions = {}): Promise<InferenceResult> {
    // A copy is transferred: the caller keeps its control image.
    const { wire, transfer } = toWire({ ...plan.control, data: plan.control.data.slice() });
    return this.request((seq) => ({ type: 'run', seq, plan: { ...plan, control: wire } }), [transfer], options);
  }

  /** Runs one outpainting in the thread (one image out). Rejects at once when `signal` aborts. */
  outpaint(plan: OutpaintPlan, options: RunOptions = {}): Promise<InferenceResult> {
    const { wire, transfer } = toWire({ ...plan.image, data: plan.image.data.slice() });
    return this.request((seq) => ({ type: 'outpaint', seq, plan: { ...plan, image: wire } }), [transfer], options);
  }

  /** Waits for the thread's turn, then sends the message and settles with its answer. */
  private async request(message: (seq: number) => ToThread, transfer: ArrayBuffer[], options: RunOptions): Promise<InferenceResult> {
    const { signal } = options;
    signal?.throwIfAborted();
    if (this.closed) throw new Error('the inference client is closed');
    const previous = this.turn;
    let release!: () => void;
    this.turn = new Promise<void>((r) => (release = r));
    let released = false;
    const releaseOnce = (): void => {
      if (!released) (released = true), release();
    };
    let dispatched = false;
    try {
      await raceAbort(previous, signal);
      const thread = await raceAbort(this.ensureThread(), signal);
      dispatched = true;
      return await this.dispatch(thread, message, transfer, options, releaseOnce);
    } catch (err) {
      // Never reached the thread: pass the turn on once the request before this one is done.
      if (!dispatched) void previous.then(releaseOnce, releaseOnce);
      throw err;
    }
  }

  private dispatch(thread: Thread, message: (seq: number) => ToThread, transfer: ArrayBuffer[], options: RunOptions, release: () => void): Promise<InferenceResult> {
    const { signal, onProgress, onImage } = options;
    const seq = ++this.seq;
    return new Promise<InferenceResult>((resolve, reject) => {
      if (thread.exited) {
        // Died between starting and this request: nothing will answer it.
        release();
        reject(new InferenceCrashError('inference thread died before the generation started; it is restarted for the next job'));
        return;
      }
      let graceTimer: NodeJS.Timeout | undefined;
      const onAbort = (): void => {
        if (!p.settled) {
          p.settled = true;
          reject(signal!.reason);
        }
        Atomics.store(thread.control, ABORT_WORD, seq);
        graceTimer = setTimeout(() => {
          if (this.pending === p && this.thread === thread) {
            this.options.logger.warn({ seq, graceMs: this.options.abortGraceMs ?? 30_000 }, 'inference thread did not stop after an abort; restarting it');
            void thread.worker.terminate();
          }
        }, this.options.abortGraceMs ?? 30_000);
        graceTimer.unref();
      };
      const p: Pending = {
        seq,
        onProgress,
        onImage,
        images: [],
        settled: false,
        resolve: (r) => {
          if (!p.settled) (p.settled = true), resolve(r);
        },
        reject: (e) => {
          if (!p.settled) (p.settled = true), reject(e);
        },
        release: () => {
          signal?.removeEventListener('abort', onAbort);
          clearTimeout(graceTimer);
          if (this.pending === p) this.pending = undefined;
          release();
        },
      };
      this.pending = p;
      signal?.addEventListener('abort', onAbort, { once: true });
      thread.worker.postMessage(message(seq), transfer);
    });
  }

  /** The running thread, starting one when there is none (after a crash, or on first use). */
  private ensureThread(): Promise<Thread> {
    const thread = this.thread;
    if (thread && !thread.exited) return thread.ready.then(() => thread);
    this.starting ??= this.spawn().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async spawn(): Promise<Thread> {
    const { script, eval: isEval } = threadEntry();
    const control = new SharedArrayBuffer(8);
    const data: ThreadData = {
      role: THREAD_ROLE,
      manifestPath: this.options.manifestPath,
      executionProvider: this.options.executionProvider,
      ...(this.options.intraOpThreads !== undefined ? { intraOpThreads: this.options.intraOpThreads } : {}),
      warmUp: this.options.warmUp ?? true,
      logLevel: this.options.logger.level,
      control,
    };
    const worker = new Worker(script, { eval: isEval, workerData: data, stdout: false, stderr: false });
    let onReady!: (p: ExecutionProvider) => void;
    let onFail!: (e: Error) => void;
    const ready = new Promise<ExecutionProvider>((resolve, reject) => ((onReady = resolve), (onFail = reject)));
    ready.catch(() => undefined); // observed by ensureThread's caller; never unhandled here
    const thread: Thread = { worker, control: new Int32Array(control), ready, exited: false };
    this.thread = thread;
    const started = performance.now();
    let isReady = false;

    worker.on('message', (msg: FromThread) => this.onMessage(thread, msg, () => (isReady = true), onReady, onFail));
    worker.on('error', (err) => {
      thread.lastError = err;
      this.options.logger.error({ err }, 'inference thread error');
    });
    worker.on('exit', (code) => {
      thread.exited = true;
      if (this.thread === thread) this.thread = undefined;
      const why = thread.lastError ? `${thread.lastError.name}: ${thread.lastError.message}` : `exit code ${code}`;
      if (!isReady) onFail(thread.lastError instanceof InferenceInitError ? thread.lastError : new InferenceCrashError(`inference thread died while starting (${why})`));
      const p = this.pending;
      if (p) {
        p.reject(this.closed ? new Error('the inference client was closed during the generation') : new InferenceCrashError(`inference thread died during a generation (${why}); it is restarted for the next job`));
        p.release();
      }
      if (this.closed) return;
      this.options.logger.error({ code, err: thread.lastError }, 'inference thread exited; restarting it');
      // Restart now so the next job finds sessions ready; a failure here surfaces on that job.
      if (isReady) this.ensureThread().catch((err) => this.options.logger.error({ err }, 'inference thread restart failed'));
    });

    const provider = await ready;
    this.providerInUse = provider;
    this.options.logger.info({ provider: provider.provider, ms: Math.round(performance.now() - started) }, 'inference thread ready');
    return thread;
  }

  private onMessage(thread: Thread, msg: FromThread, markReady: () => void, onReady: (p: ExecutionProvider) => void, onFail: (e: Error) => void): void {
    const p = this.pending;
    switch (msg.type) {
      case 'log':
        this.relayLog(msg.line);
        return;
      case 'ready':
        markReady();
        onReady(msg.provider);
        return;
      case 'init-error':
        thread.lastError = new InferenceInitError(msg.message);
        onFail(thread.lastError);
        void thread.worker.terminate();
        return;
      case 'progress':
        if (p?.seq === msg.seq && !p.settled) p.onProgress?.(msg.step, msg.total);
        return;
      case 'image': {
        if (p?.seq !== msg.seq || p.settled) return;
        const image = fromWire(msg.image);
        p.images[msg.index] = image;
        p.onImage?.(msg.index, image);
        return;
      }
      case 'result':
        if (p?.seq !== msg.seq) return;
        if (p.images.length !== msg.nsfw.length || msg.nsfw.some((_, i) => !p.images[i])) {
          p.reject(new InferenceCrashError(`inference thread sent ${p.images.filter(Boolean).length} of ${msg.nsfw.length} images`));
        } else {
          p.resolve({ images: p.images, nsfw: msg.nsfw, timings: msg.timings, generated: msg.generated, ...(msg.caption !== undefined ? { caption: msg.caption } : {}) });
        }
        p.release();
        return;
      case 'failed':
        if (p?.seq !== msg.seq) return;
        p.reject(new InferenceRunError(msg.name, msg.message));
        p.release();
        return;
      case 'aborted':
        if (p?.seq !== msg.seq) return;
        p.reject(new Error('generation aborted'));
        p.release();
        return;
    }
  }

  /** Thread log lines (pino JSON) go out through this side's logger, at their level. */
  private relayLog(line: string): void {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.options.logger.info({ line }, 'inference thread');
      return;
    }
    const { level, msg, time: _time, ...rest } = record;
    const label = LEVELS[Number(level)] ?? 'info';
    this.options.logger[label]({ thread: 'inference', ...rest }, typeof msg === 'string' ? msg : 'inference thread');
  }

  /**
   * Fault drill (tests, operators checking recovery): the thread exits at its next step
   * boundary, as if it had crashed mid-generation.
   */
  crashForDrill(): void {
    if (this.thread) Atomics.store(this.thread.control, CRASH_WORD, 1);
  }

  async close(): Promise<void> {
    this.closed = true;
    const thread = this.thread ?? (await this.starting?.catch(() => undefined));
    this.thread = undefined;
    if (thread && !thread.exited) await thread.worker.terminate();
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}
