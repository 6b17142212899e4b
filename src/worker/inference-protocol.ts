/**
 * What crosses between the worker's main thread (inference-client.ts) and the inference thread
 * (inference-thread.ts): the requests, the answers, the shared control words, and the errors
 * the client turns answers into. Structured clone; pixel buffers are transferred.
 */
import type { RawImage } from '../image/raw.ts';
import type { OutpaintRequest } from '../pipeline/outpaint.ts';
import type { ExecutionProvider, RunFault } from '../pipeline/providers.ts';
import type { Txt2ImgRequest } from '../pipeline/txt2img.ts';
import type { WarmUpSizes } from '../pipeline/warm-up.ts';
import type { V5Model } from '../workflows/catalogue.ts';
import type { QrWorkflowName } from '../workflows/names.ts';

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
  /** One flag per image (all false for a model whose manifest entry says nsfw.checker "none"). */
  readonly nsfw: boolean[];
  /** Milliseconds per stage inside the thread (txt2img stages, face, nsfw, total). */
  readonly timings: Record<string, number>;
  readonly generated: { readonly width: number; readonly height: number };
  /** Outpainting without a prompt: the captioner's text, used as the prompt. */
  readonly caption?: string;
  /** When the thread began and finished the request (ms since the epoch, the thread's clock). */
  readonly span: ThreadSpan;
  /** Every session.run of the request, ms inside ONNX Runtime, by graph role (the worker's metrics). */
  readonly onnxRuns: OnnxRuns;
}

/** Durations of session runs (ms), by the graph's role. */
export type OnnxRuns = Readonly<Record<string, readonly number[]>>;

export interface ThreadSpan {
  readonly start: number;
  readonly end: number;
}

/** Marks a worker as ours (the thread module runs only when started with it). */
export const THREAD_ROLE = 'qr-art-inference';

/** Options the thread is started with (workerData). */
export interface ThreadData {
  readonly role: typeof THREAD_ROLE;
  readonly manifestPath: string;
  readonly executionProvider: ExecutionProvider;
  readonly intraOpThreads?: number;
  /** Sizes the denoisers and VAE run at before the first job; false: no warm-up. */
  readonly warmUp: false | WarmUpSizes;
  readonly logLevel: string;
  /** Test hook (QR_ART_FAULT_INJECTION, pipeline/fault-injection.ts): makes runs fail the way a device does. */
  readonly faultInjection?: string;
  /** Int32Array words: see CRASH_WORD and abortWord(). */
  readonly control: SharedArrayBuffer;
}

/** [CRASH_WORD] = 1: the thread exits at its next step boundary (fault drill). */
export const CRASH_WORD = 0;
/** Requests the thread may hold at once (running + queued): each has its own abort word. */
export const ABORT_RING = 16;
/** Index of the word that, when it holds `seq`, tells the thread to stop request `seq`. */
export const abortWord = (seq: number): number => 1 + (seq % ABORT_RING);
/** [IN_ONNX_RUNTIME_WORD] > 0: the thread is inside a session.run (terminating it there aborts the process). */
export const IN_ONNX_RUNTIME_WORD = 1 + ABORT_RING;
/** [ONNX_RUNS_WORD]: session.runs the thread has entered (wrapping): a run that changes is not one stuck. */
export const ONNX_RUNS_WORD = 2 + ABORT_RING;
/** [STOP_RUNS_WORD] = 1: the thread starts no more session runs (it is about to be terminated). */
export const STOP_RUNS_WORD = 3 + ABORT_RING;
export const CONTROL_WORDS = 4 + ABORT_RING;
/** Exit code of a thread told to die by the fault drill. */
export const DRILL_EXIT_CODE = 70;

export type WireImage = { data: ArrayBuffer; width: number; height: number; channels: RawImage['channels'] };
export type ToThread =
  | { type: 'run'; seq: number; plan: Omit<InferencePlan, 'control'> & { control: WireImage } }
  | { type: 'outpaint'; seq: number; plan: Omit<OutpaintPlan, 'image'> & { image: WireImage } };
export type FromThread =
  | { type: 'ready'; provider: ExecutionProvider; ms: number }
  | { type: 'init-error'; name: string; message: string }
  | { type: 'log'; line: string }
  /** The thread began request `seq` (the ones before it are done). */
  | { type: 'started'; seq: number }
  | { type: 'progress'; seq: number; step: number; total: number }
  /** Image `index` of the request, final, sent before the NSFW check (every index once, before 'result'). */
  | { type: 'image'; seq: number; index: number; image: WireImage }
  | { type: 'result'; seq: number; nsfw: boolean[]; timings: Record<string, number>; generated: { width: number; height: number }; caption?: string; span: ThreadSpan; onnxRuns: OnnxRuns }
  | { type: 'failed'; seq: number; name: string; message: string; fault?: RunFault }
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

/** The generation itself threw inside the thread (name and message as thrown there, and what it says about the device). */
export class InferenceRunError extends Error {
  override readonly name = 'InferenceRunError';
  constructor(
    readonly causeName: string,
    message: string,
    readonly fault?: RunFault,
  ) {
    super(message);
  }
}
