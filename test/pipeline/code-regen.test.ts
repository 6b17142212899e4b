/**
 * The code regeneration pass (pipeline/code-regen.ts) on the demo graphs: it redraws only where
 * the mask says, the same way for the same seed, and a model without a VAE encoder skips it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/image/raw.ts';
import { CODE_REGEN, codeRegenSteps, regenerateCode } from '../../src/pipeline/code-regen.ts';
import type { DiffusionModel, PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { demoSessions } from '../helpers/demo-sessions.ts';

let withEncoder: PipelineSessions;
let withoutEncoder: PipelineSessions;
let target: DiffusionModel;

beforeAll(async () => {
  withEncoder = await demoSessions(['vae_encoder']);
  withoutEncoder = await demoSessions([]);
  target = withEncoder.forWorkflow('generate_qr_art_v5', 'universal');
});
afterAll(async () => {
  await withEncoder?.release();
  await withoutEncoder?.release();
});

const canvas = { width: 128, height: 128 };
const placement = placementFor(canvas, 0.9);
const control = renderControlImage({ content: 'QR1', pattern: 's1', canvas, placement, background: 'gray', errorCorrectionLevel: 'H' });
const request: Txt2ImgRequest = {
  prompt: 'a purple castle',
  seed: 99,
  batchSize: 1,
  steps: 6,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control: control.image,
  controlScale: 1,
  controlStart: 0,
  controlEnd: 1,
  nativeSize: 128,
  width: canvas.width,
  height: canvas.height,
  refine: false,
};

/** 1 over the left half of the code's square, 0 elsewhere. */
function leftHalfMask(): Float32Array {
  const mask = new Float32Array(canvas.width * canvas.height);
  for (let y = placement.y; y < placement.y + placement.side; y++) {
    for (let x = placement.x; x < placement.x + Math.floor(placement.side / 2); x++) mask[y * canvas.width + x] = 1;
  }
  return mask;
}

function pixelsDiffer(a: RawImage, b: RawImage, inMask: Float32Array, want: (w: number) => boolean): number {
  let n = 0;
  for (let p = 0; p < a.width * a.height; p++) {
    if (!want(inMask[p]!)) continue;
    if (a.data[p * 3] !== b.data[p * 3] || a.data[p * 3 + 1] !== b.data[p * 3 + 1] || a.data[p * 3 + 2] !== b.data[p * 3 + 2]) n++;
  }
  return n;
}

describe('regenerateCode', () => {
  it('redraws the masked pixels only, identically for the same seed', async () => {
    const [image] = (await generate(request, target)).images as [RawImage];
    const mask = leftHalfMask();
    const [a] = (await regenerateCode([{ image, index: 0, mask }], placement, request, target)) as [RawImage];
    const [b] = (await regenerateCode([{ image, index: 0, mask }], placement, request, target)) as [RawImage];
    expect(a.data).toEqual(b.data);
    expect(pixelsDiffer(image, a, mask, (w) => w === 0)).toBe(0);
    const masked = mask.reduce((n, w) => n + (w > 0 ? 1 : 0), 0);
    expect(pixelsDiffer(image, a, mask, (w) => w > 0)).toBeGreaterThan(masked / 2);
  });

  it('is skipped, image untouched and no steps counted, when the model has no VAE encoder', async () => {
    const bare = withoutEncoder.forWorkflow('generate_qr_art_v5', 'universal');
    const [image] = (await generate(request, bare)).images as [RawImage];
    const [out] = await regenerateCode([{ image, index: 0, mask: leftHalfMask() }], placement, request, bare);
    expect(out).toBe(image);
    expect(codeRegenSteps(30, bare)).toBe(0);
    expect(codeRegenSteps(30, target)).toBe(Math.floor(30 * CODE_REGEN.strength));
  });
});
