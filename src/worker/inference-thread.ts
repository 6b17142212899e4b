/**
 * The inference thread (a worker_threads worker started by inference-client.ts): loads the
 * manifest and creates the ONNX sessions once, then serves generation requests one at a time:
 * txt2img + ControlNet, the optional face pass, the NSFW check. It posts progress per step and
 * the RGB images (buffers transferred, not copied) with NSFW flags and stage timings.
 *
 * Aborts and the fault drill arrive through a shared Int32Array read at every step boundary:
 * session.run() blocks this thread, so a message would only be seen after the generation.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pino, type Logger } from 'pino';
import type ort from 'onnxruntime-node';
import { resizeImage } from '../image/decode.ts';
import { rawImage, type RawImage } from '../image/raw.ts';
import { loadManifest } from '../pipeline/manifest.ts';
import { detectNsfw } from '../pipeline/nsfw.ts';
import { applyPreset } from '../pipeline/prompts.ts';
import { GaussianStream } from '../pipeline/random.ts';
import { createScheduler, img2imgStartIndex } from '../pipeline/schedulers/index.ts';
import { CONTROL_RESIDUALS, createSessions, type DiffusionModel, type PipelineSessions } from '../pipeline/sessions.ts';
import { floatTensor, idsTensor, packRgbPlanar, product, toFloat32, unpackRgbPlanar } from '../pipeline/tensors.ts';
import { controlActive, generate, imageSeed } from '../pipeline/txt2img.ts';
import {
  ABORT_WORD,
  CRASH_WORD,
  DRILL_EXIT_CODE,
  fromWire,
  THREAD_ROLE,
  toWire,
  type FromThread,
  type InferencePlan,
  type ThreadData,
  type ToThread,
} from './inference-client.ts';

/** What serve() talks through: the port to the client, the shared control words, the log. */
interface Link {
  readonly post: (msg: FromThread, transfer?: ArrayBuffer[]) => void;
  readonly control: Int32Array;
  readonly logger: Logger;
}

// ---------------------------------------------------------------------------------------------
// enhance = face

/**
 * The face pass (v5 `enhance: face`). There is no face detector among the manifest's graphs,
 * so it refines the centred square of side FACE.region × the short side, where a portrait's
 * face sits: that crop is upscaled to at least the model's native size, VAE-encoded, noised to
 * FACE.strength and denoised with a face-detail prompt and the matching crop of the QR control
 * (so the code survives), then scaled back and pasted with a feathered edge. Pixels outside
 * the square are untouched. A face detector graph in the manifest is the upgrade path.
 */
export const FACE = Object.freeze({
  region: 0.5,
  strength: 0.35,
  prompt: 'detailed face, sharp eyes, natural skin texture',
  negative: 'deformed face, blurry face, asymmetric eyes',
  /** Feather width as a fraction of the square's side. */
  feather: 1 / 8,
});

interface Square {
  readonly x: number;
  readonly y: number;
  readonly side: number;
}

export function faceSquare(width: number, height: number): Square {
  const side = Math.max(8, Math.round(FACE.region * Math.min(width, height)));
  return { x: Math.floor((width - side) / 2), y: Math.floor((height - side) / 2), side };
}

/** Steps the face pass runs per image (0 when it cannot run). */
function faceSteps(plan: InferencePlan, target: DiffusionModel): number {
  if (!plan.enhanceFace || !target.model.graphs.vae_encoder) return 0;
  return plan.steps - img2imgStartIndex(plan.steps, FACE.strength);
}

function crop(image: RawImage, sq: Square): RawImage {
  const { channels, width } = image;
  const out = new Uint8Array(sq.side * sq.side * channels);
  const row = sq.side * channels;
  for (let y = 0; y < sq.side; y++) out.set(image.data.subarray(((sq.y + y) * width + sq.x) * channels, ((sq.y + y) * width + sq.x) * channels + row), y * row);
  return rawImage(out, sq.side, sq.side, channels);
}

/** Blends `patch` (RGB, side × side) into `image` at the square, fully inside and fading over the feather. */
function pasteFeathered(image: RawImage, patch: RawImage, sq: Square): RawImage {
  const out = new Uint8Array(image.data);
  const feather = Math.max(1, Math.round(sq.side * FACE.feather));
  for (let y = 0; y < sq.side; y++) {
    const dy = Math.min(y, sq.side - 1 - y);
    for (let x = 0; x < sq.side; x++) {
      const w = Math.min(1, (Math.min(dy, x, sq.side - 1 - x) + 0.5) / feather);
      const o = ((sq.y + y) * image.width + sq.x + x) * 3;
      const s = (y * sq.side + x) * 3;
      for (let c = 0; c < 3; c++) out[o + c] = Math.round(w * patch.data[s + c]! + (1 - w) * image.data[o + c]!);
    }
  }
  return rawImage(out, image.width, image.height, 3);
}

async function enhanceFaces(images: RawImage[], plan: InferencePlan, target: DiffusionModel, tick: () => void): Promise<RawImage[]> {
  const { model, controlnet: cn } = target;
  const { text_encoder: te, unet, vae_encoder: vaeEnc, vae_decoder: vaeDec } = model.graphs;
  if (!vaeEnc) return images;
  const spec = model.spec;
  const sq = faceSquare(plan.width, plan.height);
  const cap = Math.floor(Math.sqrt(spec.refine.maxPixels) / spec.sizeMultiple) * spec.sizeMultiple;
  const work = Math.min(cap, Math.ceil(Math.max(sq.side, spec.nativeSize) / spec.sizeMultiple) * spec.sizeMultiple);
  const h = work / 8;
  const w = work / 8;
  const per = 4 * h * w;
  const cfg = plan.guidance > 1;
  const rows = cfg ? 2 : 1;

  // Text: the styled prompt with face-detail words.
  const styled = applyPreset(plan.preset, plan.prompt, plan.negativePrompt ?? '');
  const ids = model.tokenizer.encodeBatch([[styled.negativePrompt, FACE.negative].filter(Boolean).join(', '), `${styled.prompt}, ${FACE.prompt}`]);
  const text = toFloat32((await te.run({ input_ids: idsTensor(te.input('input_ids').type, ids, [2, model.tokenizer.maxLength]) }, ['last_hidden_state'])).last_hidden_state!);
  const hidden = cfg ? text : text.slice(text.length / 2);
  const hiddenDims = [rows, model.tokenizer.maxLength, hidden.length / rows / model.tokenizer.maxLength];

  // The control image's matching square (control may be at another size than the output).
  const cx = plan.control.width / plan.width;
  const cy = plan.control.height / plan.height;
  const csq = { x: Math.round(sq.x * cx), y: Math.round(sq.y * cy), side: Math.max(1, Math.round(sq.side * Math.min(cx, cy))) };
  const controlCrop = await resizeImage(crop(plan.control, csq), work, work, 'fill');
  const plane = 3 * work * work;
  const condData = new Float32Array(rows * plane);
  packRgbPlanar(controlCrop, condData);
  if (cfg) condData.copyWithin(plane, 0, plane);
  const cond = floatTensor(cn.floatType('controlnet_cond'), condData, [rows, 3, work, work]);
  const zeros = Object.fromEntries(
    CONTROL_RESIDUALS.map((r) => {
      const dims = [rows, r.channels, Math.ceil(h / r.factor), Math.ceil(w / r.factor)];
      return [r.role, floatTensor(unet.floatType(r.role), new Float32Array(product(dims)), dims)];
    }),
  );

  const out: RawImage[] = [];
  for (let b = 0; b < images.length; b++) {
    const patch = await resizeImage(crop(images[b]!, sq), work, work, 'fill');
    const px = new Float32Array(plane);
    packRgbPlanar(patch, px, 0, 2, -1);
    const enc = toFloat32((await vaeEnc.run({ sample: floatTensor(vaeEnc.floatType('sample'), px, [1, 3, work, work]) }, ['latent_sample'])).latent_sample!);
    const clean = Float32Array.from(enc.subarray(0, per), (v) => v * spec.latentScale);
    const sched = createScheduler(plan.scheduler, plan.steps, spec.scheduler.config);
    const start = img2imgStartIndex(plan.steps, FACE.strength);
    const stream = new GaussianStream(imageSeed(plan.seed, b));
    let x = sched.addNoise(clean, stream.noise(per), start);
    const n = sched.timesteps.length;
    for (let i = start; i < n; i++) {
      const t = sched.timesteps[i]!;
      const input = sched.scaleModelInput(x, i);
      const modelIn = new Float32Array(rows * per);
      modelIn.set(input, 0);
      if (cfg) modelIn.set(input, per);
      let residuals: Record<string, ort.Tensor> = zeros;
      if (plan.controlScale > 0 && controlActive(i - start, n - start, plan.controlStart, plan.controlEnd)) {
        const res = await cn.run({
          sample: floatTensor(cn.floatType('sample'), modelIn, [rows, 4, h, w]),
          timestep: cn.timestepTensor(t, rows),
          encoder_hidden_states: floatTensor(cn.floatType('encoder_hidden_states'), hidden, hiddenDims),
          controlnet_cond: cond,
          conditioning_scale: cn.scaleTensor(plan.controlScale),
        });
        residuals = Object.fromEntries(
          CONTROL_RESIDUALS.map((r) => {
            const v = res[r.role]!;
            return [r.role, v.type === unet.input(r.role).type ? v : floatTensor(unet.floatType(r.role), toFloat32(v), [...v.dims])];
          }),
        );
      }
      const pred = toFloat32(
        (
          await unet.run(
            {
              sample: floatTensor(unet.floatType('sample'), modelIn, [rows, 4, h, w]),
              timestep: unet.timestepTensor(t, rows),
              encoder_hidden_states: floatTensor(unet.floatType('encoder_hidden_states'), hidden, hiddenDims),
              ...residuals,
            },
            ['out_sample'],
          )
        ).out_sample!,
      );
      let eps = pred.subarray(0, per);
      if (cfg) eps = Float32Array.from(eps, (u, k) => u + plan.guidance * (pred[per + k]! - u));
      x = sched.step(eps, i, x, (len) => stream.noise(len));
      tick();
    }
    const scaled = Float32Array.from(x, (v) => v / spec.latentScale);
    const dec = toFloat32((await vaeDec.run({ latent_sample: floatTensor(vaeDec.floatType('latent_sample'), scaled, [1, 4, h, w]) }, ['sample'])).sample!);
    const refined = await resizeImage(unpackRgbPlanar(dec, 0, work, work), sq.side, sq.side, 'fill');
    out.push(pasteFeathered(images[b]!, refined, sq));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Serving

class Aborted extends Error {}

async function serve(link: Link, sessions: PipelineSessions, msg: ToThread): Promise<void> {
  const { post, control, logger } = link;
  const { seq } = msg;
  const plan: InferencePlan = { ...msg.plan, control: fromWire(msg.plan.control) };
  const controller = new AbortController();
  const t0 = performance.now();
  // Aborted while it waited in the queue.
  if (Atomics.load(control, ABORT_WORD) === seq) return post({ type: 'aborted', seq });
  try {
    const target = sessions.forWorkflow(plan.workflow, plan.v5Model);
    const faceTotal = faceSteps(plan, target) * plan.batchSize;
    let offset = 0;
    let genTotal = plan.steps;
    // Every step: report, then honour an abort or the fault drill before the next one starts.
    const onStep = (done: number): void => {
      post({ type: 'progress', seq, step: offset + done, total: genTotal + faceTotal });
      if (Atomics.load(control, CRASH_WORD) === 1) process.exit(DRILL_EXIT_CODE);
      if (Atomics.load(control, ABORT_WORD) === seq) controller.abort(new Aborted('aborted'));
    };
    const gen = await generate(
      {
        prompt: plan.prompt,
        ...(plan.negativePrompt !== undefined ? { negativePrompt: plan.negativePrompt } : {}),
        ...(plan.preset !== undefined ? { preset: plan.preset } : {}),
        seed: plan.seed,
        batchSize: plan.batchSize,
        steps: plan.steps,
        guidance: plan.guidance,
        scheduler: plan.scheduler,
        control: plan.control,
        controlScale: plan.controlScale,
        controlStart: plan.controlStart,
        controlEnd: plan.controlEnd,
        width: plan.width,
        height: plan.height,
      },
      target,
      (step, total) => {
        genTotal = total;
        onStep(step);
      },
      controller.signal,
    );
    const timings: Record<string, number> = { ...gen.timings };
    delete timings.total;
    let images = gen.images;
    if (faceTotal > 0) {
      const f0 = performance.now();
      offset = genTotal;
      let done = 0;
      images = await enhanceFaces(images, plan, target, () => {
        onStep(++done);
        controller.signal.throwIfAborted();
      });
      timings.face = performance.now() - f0;
    } else if (plan.enhanceFace) {
      logger.warn({ model: target.model.id }, 'enhance=face needs a vae_encoder graph; skipped');
    }
    const checker = target.model.graphs.safety_checker;
    const n0 = performance.now();
    const nsfw = checker ? await detectNsfw(images, checker) : images.map(() => false);
    if (checker) timings.nsfw = performance.now() - n0;
    timings.total = performance.now() - t0;
    const wires = images.map(toWire);
    post(
      { type: 'result', seq, images: wires.map((w) => w.wire), nsfw, timings, generated: gen.generated },
      wires.map((w) => w.transfer),
    );
  } catch (err) {
    if (controller.signal.aborted) post({ type: 'aborted', seq });
    else post({ type: 'failed', seq, name: (err as Error).name ?? 'Error', message: (err as Error).message ?? String(err) });
  }
}

async function main(port: MessagePort, data: ThreadData): Promise<void> {
  const post = (msg: FromThread, transfer: ArrayBuffer[] = []): void => port.postMessage(msg, transfer);
  // Log lines travel to the main thread, which writes them through its own logger.
  const logger: Logger = pino({ level: data.logLevel, base: undefined }, { write: (line: string) => post({ type: 'log', line }) });
  const link: Link = { post, control: new Int32Array(data.control), logger };
  let sessions: PipelineSessions;
  const started = performance.now();
  try {
    const manifest = await loadManifest(data.manifestPath);
    sessions = await createSessions(manifest, {
      executionProvider: data.executionProvider,
      logger,
      ...(data.intraOpThreads !== undefined ? { intraOpThreads: data.intraOpThreads } : {}),
      warmUp: data.warmUp,
      // Outpainting (inpaint UNet, captioner) is not served yet: do not hold those graphs.
      roles: ['text_encoder', 'unet', 'controlnet', 'vae_decoder', 'vae_encoder', 'safety_checker'],
    });
  } catch (err) {
    post({ type: 'init-error', name: (err as Error).name, message: (err as Error).message });
    return;
  }
  for (const m of sessions.models.values()) {
    if (!m.graphs.safety_checker) logger.warn({ model: m.id }, 'no safety_checker graph: images of this model are not checked for NSFW content');
  }
  let chain = Promise.resolve();
  port.on('message', (msg: ToThread) => {
    if (msg.type === 'run') chain = chain.then(() => serve(link, sessions, msg));
  });
  post({ type: 'ready', provider: sessions.provider, ms: Math.round(performance.now() - started) });
}

// Only as the client's thread: importing this module elsewhere (tests) just gives its exports.
const data = workerData as ThreadData | null;
if (parentPort && data?.role === THREAD_ROLE) await main(parentPort, data);
