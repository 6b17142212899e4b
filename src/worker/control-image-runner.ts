import type { OutboundPolicy } from '../net/safe-url.ts';
import { decodeImage, encodePng, isImageDecodeError, resizeImage } from '../image/decode.ts';
import { DEFAULT_IMAGE_FETCH_LIMITS, fetchImage, isImageFetchError, type ImageFetchLimits } from '../image/fetch.ts';
import { invertImage, type RawImage } from '../image/raw.ts';
import { placeByArea, upscaleNearest } from '../image/resample.ts';
import { placeClientCode, type ClientCodePlacement } from '../qr/client-layout.ts';
import { renderControlImage } from '../qr/control-image.ts';
import { QrContentTooLongError } from '../qr/encode.ts';
import { ensureScannable, type QrGeometry } from '../qr/guarantee.ts';
import { QrLayoutError, type Canvas } from '../qr/layout.ts';
import { locateQr, type LocatedQr } from '../qr/locate.ts';
import { decodeAny } from '../qr/scan.ts';
import { zxingDecode } from '../qr/decoders.ts';
import { toLuma } from '../image/luma.ts';
import type { JobMessage } from '../messages/schemas.ts';
import { isWorkflowName } from '../workflows/catalogue.ts';
import { controlPlanFor, type ControlPlan } from '../workflows/control.ts';
import { JobInputError, type JobRunner, type RenderedImage, type RunHooks, type RunOutcome } from './runner.ts';

/** Share of the canvas side a client's QR image is fitted into, leaving a light margin around it. */
const CLIENT_IMAGE_RATIO = 0.8;
/** A client image smaller than this both ways is enlarged by repeating pixels (an integer factor) to at least this before it is located. */
const SMALL_CLIENT_SIDE = 256;

export interface ControlImageRunnerOptions {
  readonly policy: OutboundPolicy;
  readonly fetchLimits?: Partial<ImageFetchLimits>;
  /**
   * false: no scan verdict (isScanables left empty). For the scaling bench only, where one
   * process stands for many pods: the verdict's CPU (~0.5 s a job, each pod's on its own cores
   * in a cluster, every replica's on one main thread there) would be what it measures instead of
   * the autoscaler.
   */
  readonly scanVerdict?: boolean;
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
    if (!isWorkflowName(job.workflow)) throw new JobInputError(`unknown workflow ${job.workflow}`);
    const plan = controlPlanFor(job.workflow, job.input);
    if (plan.kind === 'none') {
      throw new JobInputError(`${job.workflow} needs the diffusion pipeline, which this worker does not have yet`, 'workflow_unavailable');
    }
    const { image, expected, codeSide, geometry } = await jobControlImage(plan, this.options, signal);
    // Started once its input is read, as the diffusion runner's device start comes after it.
    hooks.onStart?.();
    const png = await encodePng(image);
    if (this.options.scanVerdict === false) return { kind: 'images', images: Array.from({ length: job.imageCount }, () => ({ data: png, extension: 'png' })) };
    // The same verdict as generated images get (the capture family), never a repair.
    const { scannable, robustness } = await ensureScannable(image, expected, geometry, 'off', { codeSide });
    const images: RenderedImage[] = Array.from({ length: job.imageCount }, () => ({ data: png, extension: 'png', isScannable: scannable, scanRobustness: robustness }));
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
   * Where the code's modules are, in output pixels (the control image is at the output size):
   * what lets ensureScannable repair the generated images. v4/v5 add the control image itself
   * (the pattern's shapes). For a client's qrImage (v1-v3b) it is there when the code could be
   * located (clientCode says how); absent, the images are only checked.
   */
  readonly geometry?: QrGeometry;
  /** v1-v3b: how the client's code was located, or why not (for the worker's log). */
  readonly clientCode?: ClientCodeReport;
}

export type ClientCodeReport =
  | { readonly located: true; readonly matrixSource: 're-encoded' | 'sampled'; readonly misdrawnModules: number; readonly moduleSize: number }
  | { readonly located: false; readonly reason: string };

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
 * v1-v3b: the client's code, fetched and read, fitted into the centred square of the canvas; the
 * text read is what isScanables checks against. Anything wrong with the image fails the prediction
 * (refunded). When the code can be located module by module (locate.ts: an axis-aligned,
 * undistorted code), the image is scaled so its modules become whole canvas pixels on the pixel
 * grid, and the geometry lets the generated images be repaired like v4/v5's; otherwise it is
 * letterboxed as it is and the images are only checked.
 *
 * No control image goes into the geometry: the repair's shape-following is for the pattern we drew.
 * The client's picture (colours, antialiasing, a logo) is no mask, and where its drawing differs
 * from the true matrix (a logo over modules) a shape taken from it has no pixel of the module's
 * colour, so exactly those modules could not be repaired. Cores are the plain disks and squares.
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
    if (isImageFetchError(error) || isImageDecodeError(error)) throw new JobInputError(`qrImage ${error.message}`, 'invalid_qr_image', isImageFetchError(error) && error.transient);
    throw error;
  }
  let decoded = await decodeAny(client);
  if (!decoded) {
    // A light-on-dark code, which phones read: turned dark-on-light, the way the ControlNet and
    // the scan check expect codes (the content is the same).
    const negative = invertImage(client);
    decoded = await decodeAny(negative);
    if (decoded) client = negative;
  }
  if (!decoded) {
    throw new JobInputError(
      'qrImage is not a readable QR code: no decoder found a code in it (dark on light or light on dark; a transparent background counts as white; Micro QR and rMQR codes are not read); send a sharp QR code image',
      'unreadable_qr_image',
    );
  }
  // Which one the art should carry cannot be told, and a phone may read either: the scan check
  // would judge every image of it unscannable. The ladder stops at its first read, made with the
  // code scaled to about 400 px, where a second, smaller code can vanish; one read at the
  // image's own resolution sees it.
  // Both polarities: ZXing-C++ on a phone reads a light-on-dark code beside a dark one, and our
  // ladder reads dark-on-light only.
  const nativeReads = [...(await zxingDecode(toLuma(client))), ...(await zxingDecode(toLuma(invertImage(client))))];
  const otherTexts = new Set([...decoded.otherTexts, ...nativeReads.filter((text) => text !== decoded.text)]);
  if (otherTexts.size > 0) {
    throw new JobInputError(`qrImage holds ${otherTexts.size + 1} QR codes with different contents; send an image of the one code the art should carry`, 'invalid_qr_image');
  }
  const fitSide = Math.round(CLIENT_IMAGE_RATIO * Math.min(canvas.width, canvas.height));
  // A code drawn at a pixel or two a module (`qrcode` at scale 1): its module edges cannot be
  // measured, and a smooth resize would blur it. Repeated pixels keep it exactly as drawn.
  // Both sides small: a long strip stays as it is (enlarged, it would cost memory, not locating).
  const small = Math.max(client.width, client.height) < SMALL_CLIENT_SIDE;
  const source = small ? upscaleNearest(client, Math.ceil(SMALL_CLIENT_SIDE / Math.min(client.width, client.height))) : client;
  const placed = await locateAndPlace(source, decoded.text, canvas, fitSide);
  if ('reason' in placed) {
    return { image: await letterbox(source, canvas, fitSide), expected: decoded.text, codeSide: fitSide, clientCode: { located: false, reason: placed.reason } };
  }
  const { located, placement } = placed;
  const { layout } = placement;
  return {
    image: placeByArea(source, canvas, placement.transform),
    expected: decoded.text,
    codeSide: layout.codePixels,
    geometry: { matrix: located.matrix, layout },
    clientCode: { located: true, matrixSource: located.matrixSource, misdrawnModules: located.misdrawnModules, moduleSize: layout.moduleSize },
  };
}

/**
 * The client's code located and placed on the canvas's module grid, or why not. Locating only adds
 * the repair: whatever goes wrong in it leaves the job as it was without (checked, not repaired).
 */
async function locateAndPlace(client: RawImage, text: string, canvas: Canvas, fitSide: number): Promise<{ located: LocatedQr; placement: ClientCodePlacement } | { reason: string }> {
  try {
    const located = await locateQr(client, text);
    if (!located.located) return { reason: located.reason };
    const placement = placeClientCode(located, client, canvas, fitSide);
    return typeof placement === 'string' ? { reason: placement } : { located, placement };
  } catch (error) {
    return { reason: `locating the code failed: ${error instanceof Error ? error.message : String(error)}` };
  }
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
