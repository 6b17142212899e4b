import type { OutboundPolicy } from '../net/safe-url.ts';
import { decodeImage, encodePng, isImageDecodeError, resizeImage } from '../image/decode.ts';
import { DEFAULT_IMAGE_FETCH_LIMITS, fetchImage, isImageFetchError, type ImageFetchLimits } from '../image/fetch.ts';
import type { RawImage } from '../image/raw.ts';
import { renderControlImage } from '../qr/control-image.ts';
import { QrContentTooLongError } from '../qr/encode.ts';
import type { QrGeometry } from '../qr/guarantee.ts';
import { QrLayoutError } from '../qr/layout.ts';
import { decodeAny, scanCheck } from '../qr/scan.ts';
import type { JobMessage } from '../queue/schemas.ts';
import { isWorkflowName } from '../workflows/catalogue.ts';
import { controlPlanFor, type ControlPlan } from '../workflows/control.ts';
import { JobInputError, type JobRunner, type RenderedImage, type RunHooks, type RunOutcome } from './runner.ts';

/** Share of the canvas side a client's QR image is fitted into, leaving a light margin around it. */
const CLIENT_IMAGE_RATIO = 0.8;

export interface ControlImageRunnerOptions {
  readonly policy: OutboundPolicy;
  readonly fetchLimits?: Partial<ImageFetchLimits>;
}

/**
 * Until the diffusion pipeline lands, workers return the control image the art will be
 * conditioned on: the content's code in the requested pattern, size and place (v4, v5), or
 * the client's own code normalized to the canvas (v1-v3b), with a real scan check. It
 * exercises the whole job path (queue, events, object store, webhooks) with real files.
 * Outpainting needs the pipeline and fails with a refund.
 */
export class ControlImageRunner implements JobRunner {
  readonly name = 'control-image';

  constructor(private readonly options: ControlImageRunnerOptions) {}

  async run(job: JobMessage, hooks: RunHooks): Promise<RunOutcome> {
    const { signal } = hooks;
    hooks.onStart?.();
    if (!isWorkflowName(job.workflow)) throw new JobInputError(`unknown workflow ${job.workflow}`);
    const plan = controlPlanFor(job.workflow, job.input);
    if (plan.kind === 'none') {
      throw new JobInputError(`${job.workflow} needs the diffusion pipeline, which this worker does not have yet`, 'workflow_unavailable');
    }
    const { image, expected, codeSide } = await jobControlImage(plan, this.options, signal);
    const png = await encodePng(image);
    const { scannable } = await scanCheck(image, expected, { codeSide });
    const images: RenderedImage[] = Array.from({ length: job.imageCount }, () => ({ data: png, extension: 'png', isScannable: scannable }));
    return { kind: 'images', images };
  }
}

export interface JobControlImage {
  readonly image: RawImage;
  /** The text isScanables checks against: qrContent, or what was read from qrImage. */
  readonly expected: string;
  /** Side of the code in the image, in pixels: the scan check's scale hint. */
  readonly codeSide: number;
  /**
   * Where the code's modules are, in output pixels (the control image is at the output size),
   * and the control image itself (the pattern's shapes): what lets ensureScannable repair the
   * generated images. v4/v5 only. Absent for a client's qrImage (v1-v3b): the decoders report
   * only that a code was read, not where each module of it lies after the letterbox resize, so
   * those images are checked and never repaired.
   */
  readonly geometry?: QrGeometry;
}

/** The control image of a QR job; input problems become JobInputErrors (failed, refunded). */
export async function jobControlImage(
  plan: Exclude<ControlPlan, { kind: 'none' }>,
  options: ControlImageRunnerOptions,
  signal: AbortSignal,
): Promise<JobControlImage> {
  if (plan.kind === 'client-image') return clientControlImage(plan.url, plan.canvas, options, signal);
  try {
    const control = renderControlImage(plan);
    return {
      image: control.image,
      expected: plan.content,
      codeSide: control.layout.codePixels,
      geometry: { matrix: control.matrix, layout: control.layout, control: control.image },
    };
  } catch (error) {
    if (error instanceof QrContentTooLongError || error instanceof QrLayoutError) throw new JobInputError(error.message);
    throw error;
  }
}

/**
 * v1-v3b: the client's code, fetched and read, letterboxed into the centred square of the
 * canvas; the text read is what isScanables checks against. Anything wrong with the image
 * fails the prediction (refunded).
 */
export async function clientControlImage(
  url: string,
  canvas: { width: number; height: number },
  options: ControlImageRunnerOptions,
  signal: AbortSignal,
): Promise<JobControlImage> {
  const limits = { ...DEFAULT_IMAGE_FETCH_LIMITS, ...options.fetchLimits };
  let client: RawImage;
  try {
    const fetched = await fetchImage(url, { ...limits, policy: options.policy, signal });
    client = await decodeImage(fetched.bytes, { maxPixels: limits.maxPixels, channels: 3 });
  } catch (error) {
    if (isImageFetchError(error) || isImageDecodeError(error)) throw new JobInputError(`qrImage ${error.message}`, 'invalid_qr_image');
    throw error;
  }
  const decoded = await decodeAny(client);
  if (!decoded) {
    throw new JobInputError('qrImage is not a readable QR code: no decoder found a code in it; send a sharp black-and-white QR code image', 'unreadable_qr_image');
  }
  const codeSide = Math.round(CLIENT_IMAGE_RATIO * Math.min(canvas.width, canvas.height));
  return { image: await letterbox(client, canvas, codeSide), expected: decoded.text, codeSide };
}

/** The client's image fitted (aspect kept) into a centred square of `side` px on a white canvas. */
async function letterbox(image: RawImage, canvas: { width: number; height: number }, side: number): Promise<RawImage> {
  const fitted = await resizeImage(image, side, side, 'contain');
  const out = new Uint8Array(canvas.width * canvas.height * fitted.channels).fill(255);
  const left = Math.floor((canvas.width - side) / 2);
  const top = Math.floor((canvas.height - side) / 2);
  const rowBytes = side * fitted.channels;
  for (let y = 0; y < side; y++) {
    out.set(fitted.data.subarray(y * rowBytes, (y + 1) * rowBytes), ((top + y) * canvas.width + left) * fitted.channels);
  }
  return { data: out, width: canvas.width, height: canvas.height, channels: fitted.channels };
}
