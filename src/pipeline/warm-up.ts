/**
 * Warm-up: every graph runs once before the first job, the denoising graphs and the VAE at the
 * sizes production uses. On a GPU the first run at a new shape pays for kernel selection
 * (cuDNN's convolution-algorithm search, WebGPU's shader compilation) and arena growth; paying
 * it here keeps it out of the first customer's job. Which sizes: WARMUP_SIZES (config.ts), by
 * default each model's native square.
 */
import type { Logger } from 'pino';
import { rawImage } from '../image/raw.ts';
import type { TextConditioning } from './denoisers.ts';
import { encodePrompts, vaeDecode, vaeEncode } from './diffusion-parts.ts';
import { detectFaces } from './face-detect.ts';
import type { Size } from './framing.ts';
import type { GraphSession } from './graph-session.ts';
import { detectNsfw } from './nsfw.ts';
import type { ModelSessions, PipelineSessions } from './sessions.ts';
import { floatTensor, idsTensor } from './tensors.ts';
import { generationFrame } from './txt2img.ts';

/** 'native': each model's nativeSize square. */
export type WarmUpSizes = 'native' | readonly Size[];

/** Runs every loaded graph once: the denoisers and VAE at each size (output sizes, as a request gives them). */
export async function warmUp(sessions: PipelineSessions, sizes: WarmUpSizes, log: Logger): Promise<void> {
  for (const m of sessions.models.values()) {
    const started = performance.now();
    const shapes = sizes === 'native' ? [{ width: m.spec.nativeSize, height: m.spec.nativeSize }] : sizes;
    const generated = [...new Map(shapes.map((s) => generationFrame(s, m.spec.nativeSize, m.spec.sizeMultiple)).map((f) => [`${f.width}x${f.height}`, f])).values()];
    const text = await encodePrompts(m, '', '', true);
    // The inpainting UNet has rows of its own: ordinary CFG even beside a full-LCM denoiser.
    const inpaintText = m.graphs.unet_inpaint ? await encodePrompts(m, '', '', true, 'unet_inpaint') : undefined;
    for (const size of generated) {
      const h = size.height / 8;
      const w = size.width / 8;
      const control = rawImage(new Uint8Array(size.width * size.height).fill(128), size.width, size.height, 1);
      for (const denoiser of sessions.denoisersOf(m.id)) {
        const step = await denoiser.start({ text, batch: 1, h, w, control, controlScale: 1, guidance: 7, time: (_stage, fn) => fn() });
        const latents = new Float32Array(4 * h * w);
        await step.predict(latents, 500, true);
        await step.predict(latents, 500, false);
        step.release();
      }
      await vaeDecode(m, new Float32Array(4 * h * w), h, w);
      if (m.graphs.vae_encoder) await vaeEncode(m, new Float32Array(3 * size.width * size.height), size.width, size.height);
      if (m.graphs.unet_inpaint && inpaintText) await warmInpaint(m.graphs.unet_inpaint, inpaintText, h, w);
    }
    // The fp32 decoder is a fallback: one small run proves it executes; a fallback decode pays its own kernel selection.
    const fp32 = m.graphs.vae_decoder_fp32;
    if (fp32) await fp32.run({ latent_sample: zeros(fp32, 'latent_sample', [1, 4, 8, 8]) });
    await warmChecker(m);
    await warmCaptioner(m);
    const detector = m.graphs.face_detector;
    if (detector) await detectFaces(rawImage(new Uint8Array(64 * 64 * 3).fill(128), 64, 64, 3), detector, m.spec.faceDetector);
    log.info({ model: m.id, provider: sessions.provider.provider, sizes: generated.map((s) => `${s.width}x${s.height}`), ms: Math.round(performance.now() - started) }, 'model sessions warmed up');
  }
}

const zeros = (g: GraphSession, role: string, dims: number[]) => floatTensor(g.floatType(role), new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);

/** One step of the inpainting UNet as outpainting runs it: a row per text row (CFG: two). */
async function warmInpaint(g: GraphSession, text: TextConditioning, h: number, w: number): Promise<void> {
  const ehs = floatTensor(g.floatType('encoder_hidden_states'), text.hidden, [text.rows, text.tokens, text.width]);
  await g.run({ sample: zeros(g, 'sample', [text.rows, 9, h, w]), timestep: g.timestepTensor(500, text.rows), encoder_hidden_states: ehs });
}

/** The model's NSFW checker, whichever nsfw.checker names (safety checker, content filter, classifier), through its own preprocessing, on one grey image. */
async function warmChecker(m: ModelSessions): Promise<void> {
  if (m.nsfw) await detectNsfw([rawImage(new Uint8Array(64 * 64 * 3).fill(128), 64, 64, 3)], m.nsfw);
}

async function warmCaptioner(m: ModelSessions): Promise<void> {
  const { captioner_encoder: enc, captioner_decoder: dec } = m.graphs;
  if (!enc || !dec) return;
  const px = enc.input('pixel_values').shape;
  const side = (i: number): number => (typeof px[i] === 'number' ? (px[i] as number) : 224);
  const hidden = (await enc.run({ pixel_values: zeros(enc, 'pixel_values', [1, 3, side(2), side(3)]) })).last_hidden_state!;
  const feeds = {
    input_ids: idsTensor(dec.input('input_ids').type, Int32Array.of(1), [1, 1]),
    encoder_hidden_states: hidden,
    ...(dec.hasInput('attention_mask') ? { attention_mask: idsTensor(dec.input('attention_mask').type, Int32Array.of(1), [1, 1]) } : {}),
    ...(dec.hasInput('encoder_attention_mask') ? { encoder_attention_mask: idsTensor(dec.input('encoder_attention_mask').type, new Int32Array(hidden.dims[1]!).fill(1), [1, hidden.dims[1]!]) } : {}),
  };
  await dec.run(feeds);
}
