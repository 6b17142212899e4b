import type { JobMessage } from '../queue/schemas.ts';

/** One output image, encoded, with the scan verdict against the expected QR content (QR workflows only). */
export interface RenderedImage {
  data: Uint8Array;
  extension: 'png' | 'jpg' | 'webp';
  /** Absent for outputs that carry no code (outpainting). */
  isScannable?: boolean;
}

export type RunOutcome =
  /** caption: outpainting without a prompt, the text the captioner wrote and the model was given. */
  | { kind: 'images'; images: RenderedImage[]; caption?: string }
  | { kind: 'nsfw' };

/** What the daemon needs from a generation pipeline: a job in, images (or an NSFW verdict) out. */
export interface JobRunner {
  readonly name: string;
  run(job: JobMessage, signal: AbortSignal): Promise<RunOutcome>;
}

/** The input cannot be processed, whatever the retries: fail the prediction (refunded). */
export class JobInputError extends Error {
  constructor(
    message: string,
    readonly code = 'invalid_input',
  ) {
    super(message);
  }
}
