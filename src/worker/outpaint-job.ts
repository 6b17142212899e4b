/**
 * An outpainting job (spec 4.3) on the diffusion worker:
 *
 *   image      fetched with the qrImage fetcher's guard and limits (SSRF-safe, timeouts, byte and
 *              pixel caps, format sniffed), decoded, resized to image_width × image_height
 *   painting   in the inference thread (pipeline/outpaint.ts): caption when there is no prompt,
 *              inpainting UNet passes over the new border, the original pasted back, NSFW check
 *   output     one PNG of exactly (image_width + left + right) × (image_height + top + bottom);
 *              the caption, when one was written, goes into output.caption
 *
 * An image that cannot be fetched or decoded fails the prediction as `invalid_image` (refunded).
 */
import type { Logger } from 'pino';
import { decodeImage, isImageDecodeError, resizeImage } from '../image/decode.ts';
import { DEFAULT_IMAGE_FETCH_LIMITS, fetchImage, isImageFetchError, type ImageFetchLimits } from '../image/fetch.ts';
import type { RawImage } from '../image/raw.ts';
import type { OutboundPolicy } from '../net/safe-url.ts';
import type { JobMessage } from '../messages/schemas.ts';
import { OUTPAINTING_TYPES, type OutpaintingType } from '../workflows/catalogue.ts';
import { resolveOutpainting } from '../pipeline/manifest.ts';
import { deadlineFor, underDeadline, type DeadlineSettings } from './deadline.ts';
import type { FinishPool, FinishResult } from './finish-pool.ts';
import type { InferenceClient, ProgressListener } from './inference-client.ts';
import type { OutpaintPlan } from './inference-protocol.ts';
import type { WorkerMetrics } from './metrics.ts';
import { JobInputError, type RunHooks, type RunOutcome } from './runner.ts';

export interface OutpaintJobOptions extends Partial<RunHooks> {
  readonly inference: InferenceClient;
  readonly finishing: FinishPool;
  readonly logger: Logger;
  readonly policy: OutboundPolicy;
  readonly fetchLimits?: Partial<ImageFetchLimits>;
  readonly deadline?: DeadlineSettings;
  readonly onProgress?: ProgressListener;
  readonly metrics?: WorkerMetrics;
}

export interface OutpaintRun {
  readonly outcome: RunOutcome;
  readonly timings: Record<string, number>;
  readonly seed: number;
  readonly width: number;
  readonly height: number;
}

/** The job's fields, as parseCreateBody left them (present and in range). */
function fieldsOf(input: Readonly<Record<string, unknown>>): Omit<OutpaintPlan, 'image'> & { url: string; width: number; height: number } {
  const int = (key: string): number => {
    const v = input[key];
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new JobInputError(`the job has no integer ${key}`);
    return v;
  };
  const text = (key: string): string | undefined => (typeof input[key] === 'string' && (input[key] as string).trim() !== '' ? (input[key] as string) : undefined);
  const url = text('image');
  if (!url) throw new JobInputError('the job has no image URL');
  const type = input.type as OutpaintingType;
  if (!OUTPAINTING_TYPES.includes(type)) throw new JobInputError(`type must be one of ${OUTPAINTING_TYPES.join(', ')}`);
  const prompt = text('prompt');
  const negativePrompt = text('negativePrompt');
  return {
    url,
    width: int('image_width'),
    height: int('image_height'),
    padding: { left: int('padding_left'), right: int('padding_right'), top: int('padding_top'), bottom: int('padding_bottom') },
    type,
    seed: int('seed'),
    ...(prompt ? { prompt } : {}),
    ...(negativePrompt ? { negativePrompt } : {}),
  };
}

export async function runOutpaintJob(job: JobMessage, options: OutpaintJobOptions): Promise<OutpaintRun> {
  const t0 = performance.now();
  const timings: Record<string, number> = {};
  const { url, width, height, ...plan } = fieldsOf(job.input);
  const log = options.logger.child({ predictionId: job.id, workflow: job.workflow });

  const limits = { ...DEFAULT_IMAGE_FETCH_LIMITS, ...options.fetchLimits };
  let original: RawImage;
  try {
    const fetched = await fetchImage(url, { ...limits, policy: options.policy, ...(options.signal ? { signal: options.signal } : {}) });
    original = await decodeImage(fetched.bytes, { maxPixels: limits.maxPixels, channels: 3 });
  } catch (error) {
    if (isImageFetchError(error) || isImageDecodeError(error)) throw new JobInputError(`image ${error.message}`, 'invalid_image', isImageFetchError(error) && error.transient);
    throw error;
  }
  const image = original.width === width && original.height === height ? original : await resizeImage(original, width, height, 'fill');
  timings.fetch = performance.now() - t0;

  const i0 = performance.now();
  let png: Promise<FinishResult> | undefined;
  const canvas = { width: width + plan.padding.left + plan.padding.right, height: height + plan.padding.top + plan.padding.bottom };
  const result = await underDeadline(outpaintDeadline(options.inference.manifest, plan.type, canvas, options.deadline), options, (signal, onStart) =>
    options.inference.outpaint(
      { ...plan, image },
      {
        signal,
        onStart,
        onProgress: (step, total) => {
          log.debug({ step, total }, 'outpainting step');
          options.onProgress?.(step, total);
        },
        // Encoding starts as soon as the image exists; an NSFW verdict discards it.
        onImage: (_, out) => {
          png = options.finishing.finish(out);
          png.catch(() => undefined);
        },
      },
    ),
  );
  Object.assign(timings, result.timings);
  timings.inference = performance.now() - i0;
  delete timings.total;
  const [out] = result.images;
  const size = { width: out!.width, height: out!.height };
  if (result.nsfw.some(Boolean)) {
    log.info('outpainting flagged as NSFW');
    timings.total = performance.now() - t0;
    return { outcome: { kind: 'nsfw' }, timings, seed: plan.seed, ...size };
  }
  const p0 = performance.now();
  const encoded = await (png ?? options.finishing.finish(out!));
  const data = new Uint8Array(encoded.png);
  timings.png_wait = performance.now() - p0;
  options.metrics?.stage('png_encode', encoded.pngMs / 1000);
  timings.total = performance.now() - t0;
  log.info({ ...size, caption: result.caption, ms: Math.round(timings.total) }, 'outpainting done');
  return {
    outcome: { kind: 'images', images: [{ data, extension: 'png' }], ...(result.caption !== undefined ? { caption: result.caption } : {}) },
    timings,
    seed: plan.seed,
    ...size,
  };
}

/**
 * The deadline of an outpainting: its denoising steps (all passes of multi_shots) over the area it
 * paints, the output canvas up to maxPixels (a pass is never larger), at least the native area.
 */
export function outpaintDeadline(manifest: OutpaintJobOptions['inference']['manifest'], type: OutpaintingType, canvas: { width: number; height: number }, settingsOf: DeadlineSettings = {}): number {
  const { settings, model } = resolveOutpainting(manifest);
  const steps = type === 'multi_shots' ? settings.multiShots.steps * settings.multiShots.maxPasses : settings.steps;
  const painted = Math.min(canvas.width * canvas.height, settings.maxPixels ?? model.nativeSize * model.nativeSize);
  const side = Math.max(model.nativeSize, Math.sqrt(painted));
  return deadlineFor({ steps, batchSize: 1, width: side, height: side }, model.nativeSize, settingsOf);
}
