import jsQRModule from 'jsqr';
import QRCode from 'qrcode';
import sharp from 'sharp';
import type { JobMessage } from '../queue/schemas.ts';
import { catalogue, isWorkflowName } from '../workflows/catalogue.ts';
import { outputSize } from '../workflows/sizes.ts';
import { JobInputError, type JobRunner, type RenderedImage, type RunOutcome } from './runner.ts';

// jsqr is a CommonJS bundle whose module.exports also carries `default`.
type Decode = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;
const jsQR = ((jsQRModule as unknown as { default?: Decode }).default ?? jsQRModule) as unknown as Decode;

/**
 * Until the diffusion pipeline lands, workers render the plain code that the art will be
 * built around: the content encoded at level H, placed at qrX/qrY/qrRatio on a canvas of
 * the requested size, checked with a real decoder. It exercises the whole job path
 * (queue, events, object store, webhooks) with real files. Workflows that start from a
 * client's image (v1-v3b, outpainting) need the image layer and fail with a refund.
 */
export class PlainQrRunner implements JobRunner {
  readonly name = 'plain-qr';

  async run(job: JobMessage): Promise<RunOutcome> {
    if (!isWorkflowName(job.workflow)) throw new JobInputError(`unknown workflow ${job.workflow}`);
    const family = catalogue[job.workflow].family;
    if (family === 'qr-image' || family === 'outpainting') {
      throw new JobInputError(`${job.workflow} needs the image pipeline, which this worker does not have yet`, 'workflow_unavailable');
    }
    const content = String(job.input.qrContent);
    const layout = placement(job);
    const code = await QRCode.toBuffer(content, { errorCorrectionLevel: 'H', margin: 0, width: layout.side, color: { dark: '#000000', light: '#ffffff' } });
    const images: RenderedImage[] = [];
    for (let index = 0; index < job.imageCount; index++) {
      const png = await sharp({ create: { width: layout.width, height: layout.height, channels: 3, background: '#ffffff' } })
        .composite([{ input: await sharp(code).resize(layout.side, layout.side, { kernel: 'nearest' }).toBuffer(), left: layout.x, top: layout.y }])
        .png()
        .toBuffer();
      images.push({ data: png, extension: 'png', isScannable: await scansAs(png, content) });
    }
    return { kind: 'images', images };
  }
}

function placement(job: JobMessage): { width: number; height: number; side: number; x: number; y: number } {
  const input = job.input as { aspectRatio?: string; resolution?: string; qrRatio?: number; qrX?: number; qrY?: number };
  if (input.aspectRatio && input.resolution) {
    const { width, height } = outputSize(input.aspectRatio as never, input.resolution as never);
    const side = Math.round((input.qrRatio ?? 0.6) * Math.min(width, height));
    return { width, height, side, x: input.qrX ?? Math.round((width - side) / 2), y: input.qrY ?? Math.round((height - side) / 2) };
  }
  // v4 family: the model's native square canvas with a quiet zone around the code.
  const size = 768;
  const side = Math.round(size * 0.8);
  return { width: size, height: size, side, x: (size - side) / 2, y: (size - side) / 2 };
}

async function scansAs(png: Uint8Array, expected: string): Promise<boolean> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const decoded = jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), info.width, info.height);
  return decoded?.data === expected;
}
