import type { JobMessage } from '../messages/schemas.ts';
import { InferenceRunError } from './inference-protocol.ts';

/** One output image, encoded, with the scan verdict against the expected QR content (QR workflows only). */
export interface RenderedImage {
  data: Uint8Array;
  extension: 'png' | 'jpg' | 'webp';
  /** Absent for outputs that carry no code (outpainting). */
  isScannable?: boolean;
  /** Share of the scan check's simulated phone captures that read the code (with isScannable). */
  scanRobustness?: number;
}

export type RunOutcome =
  /** caption: outpainting without a prompt, the text the captioner wrote and the model was given. */
  | { kind: 'images'; images: RenderedImage[]; caption?: string }
  | { kind: 'nsfw' };

/** How a run tells the daemon where it is, and how the daemon stops it. */
export interface RunHooks {
  readonly signal: AbortSignal;
  /** The device began the job: the daemon publishes `executing`. */
  readonly onStart?: () => void;
  /** The device is done with the job (what is left runs on the CPU): the daemon may send it the next one. */
  readonly onDeviceDone?: () => void;
  /** A denoising step finished: step of total, over every image of the job. */
  readonly onProgress?: (step: number, total: number) => void;
}

/** What the daemon needs from a generation pipeline: a job in, images (or an NSFW verdict) out. */
export interface JobRunner {
  readonly name: string;
  run(job: JobMessage, hooks: RunHooks): Promise<RunOutcome>;
}

/** The input cannot be processed, whatever the retries: fail the prediction (refunded). out_of_memory: it does not fit the device. */
export class JobInputError extends Error {
  constructor(
    message: string,
    readonly code = 'invalid_input',
    /**
     * The input could not be had for now (its host answered 503, timed out, reset the
     * connection): the job is handed back while it has attempts left, and fails with this
     * error on its last.
     */
    readonly transient = false,
  ) {
    super(message);
  }
}

/** The device failed under the job (a CUDA error, a lost device): hand the job back and let the process exit. */
export class DeviceFaultError extends Error {
  override readonly name = 'DeviceFaultError';
}

/** The job ran past its deadline (JOB_TIMEOUT_MS): it is handed back, and fails with a refund after MaxDeliver. */
export class JobDeadlineError extends Error {
  override readonly name = 'JobDeadlineError';
}

/** V8's RangeError when a typed array or buffer cannot be allocated. */
const HOST_OUT_OF_MEMORY = /^Array buffer allocation failed/;
/** V8's other RangeErrors: a length or depth the engine refuses, a fault of the code, not of the request. */
const ENGINE_RANGE_ERROR = /^(Invalid (typed )?array length|Invalid string length|Maximum call stack size exceeded|Invalid array buffer length)/;

/**
 * What an inference failure means for the job: the pipeline's own range checks (RangeError; not
 * V8's own: the host out of memory is an out-of-memory, a stack overflow is handed back), an
 * out-of-memory, an image of NaN/Inf (pipeline/non-finite.ts: another attempt with the same
 * graphs gives the same) and a graph the job needs that this worker has not loaded (an
 * outpainting model without its inpainting UNet or VAE encoder, no captioner for a blank
 * prompt: GraphSessionError) fail it (refunded: retrying cannot help), a device fault is the
 * device's, and anything else is handed back for another attempt.
 */
export function asJobError(error: unknown): unknown {
  if (!(error instanceof InferenceRunError)) return error;
  if (error.fault === 'out_of_memory') {
    return new JobInputError(`the generation does not fit in the device's memory (${error.message}); try a smaller resolution or batchSize`, 'out_of_memory');
  }
  if (error.fault === 'device') return new DeviceFaultError(error.message);
  if (error.causeName === 'RangeError') {
    // V8's own RangeErrors are the host's, not the request's: memory it could not have is memory, the rest a fault of ours.
    if (HOST_OUT_OF_MEMORY.test(error.message)) return new JobInputError(`the generation does not fit in the worker's memory (${error.message}); try a smaller resolution or batchSize`, 'out_of_memory');
    return ENGINE_RANGE_ERROR.test(error.message) ? error : new JobInputError(error.message);
  }
  if (error.causeName === 'GraphSessionError') return new JobInputError(`this service cannot run the request: ${error.message}`, 'workflow_unavailable');
  if (error.causeName === 'NonFiniteOutputError') {
    return new JobInputError(`the model produced an unusable image for this request (${error.message})`, 'invalid_model_output');
  }
  return error;
}
