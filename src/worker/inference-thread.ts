/**
 * The inference thread (a worker_threads worker started by inference-client.ts): loads the
 * manifest and creates the ONNX sessions once, then serves requests one at a time: QR art
 * (txt2img + ControlNet, the optional face pass, the NSFW check) and outpainting. It posts
 * progress per step, each RGB image as soon as it is final (buffer transferred), then the NSFW
 * flags and stage timings.
 *
 * Aborts and the fault drill arrive through a shared Int32Array read at every step boundary:
 * session.run() blocks this thread, so a message would only be seen after the generation. A
 * failed run is reported with what its error says about the device (providers.ts): the client
 * side decides whether the job is retried, failed, or the device is given up.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pino, type Logger } from 'pino';
import type { RawImage } from '../image/raw.ts';
import { StageClock } from '../pipeline/diffusion-parts.ts';
import { enhanceFaces, facePassBlocker, faceSteps, findFaceSquares } from '../pipeline/face-pass.ts';
import { setNativeRunMarker, setRunObserver } from '../pipeline/graph-session.ts';
import { loadManifest } from '../pipeline/manifest.ts';
import { detectNsfw } from '../pipeline/nsfw.ts';
import { installFaults, parseFaultSpec } from '../pipeline/fault-injection.ts';
import { classifyRunError } from '../pipeline/providers.ts';
import { createSessions, type PipelineSessions } from '../pipeline/sessions.ts';
import { explainGraphFailure } from '../models/refusal-note.ts';
import { outpaint } from '../pipeline/outpaint.ts';
import { generate, type Txt2ImgRequest, type Txt2ImgStage } from '../pipeline/txt2img.ts';
import { warmUp } from '../pipeline/warm-up.ts';
import {
  abortWord,
  CRASH_WORD,
  DRILL_EXIT_CODE,
  IN_ONNX_RUNTIME_WORD,
  ONNX_RUNS_WORD,
  STOP_RUNS_WORD,
  fromWire,
  THREAD_ROLE,
  toWire,
  type FromThread,
  type InferencePlan,
  type OutpaintPlan,
  type ThreadData,
  type ToThread,
} from './inference-protocol.ts';

/** What serve() talks through: the port to the client, the shared control words, the log, the session runs. */
interface Link {
  readonly post: (msg: FromThread, transfer?: ArrayBuffer[]) => void;
  readonly control: Int32Array;
  readonly logger: Logger;
  readonly runs: RunLog;
}

/**
 * The session runs of the request being served, by role. Requests run one at a time here, so
 * one log, emptied as each starts, holds exactly its runs; they go back with its result, since
 * the metrics live in the main thread.
 */
class RunLog {
  private byRole: Record<string, number[]> = {};
  record(role: string, ms: number): void {
    (this.byRole[role] ??= []).push(ms);
  }
  take(): Record<string, number[]> {
    const runs = this.byRole;
    this.byRole = {};
    return runs;
  }
}

// ---------------------------------------------------------------------------------------------
// Serving

class Aborted extends Error {}

/** What a handler gets from the request frame (serve): step reporting, image hand-over, the abort signal. */
interface Job {
  readonly seq: number;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** Reports step `done` of `total`, then honours an abort or the fault drill before the next step. */
  readonly step: (done: number, total: number) => void;
  /** Sends a final image to the main thread now (a copy: this side may still need the pixels). */
  readonly image: (index: number, image: RawImage) => void;
}

type Answer = Omit<Extract<FromThread, { type: 'result' }>, 'span' | 'onnxRuns'>;

/** The frame every request runs in: abort before start, progress, images, result or failure. */
async function serve(link: Link, msg: ToThread, handle: (job: Job) => Promise<Omit<Answer, 'type' | 'seq'>>): Promise<void> {
  const { post, control, logger } = link;
  const { seq } = msg;
  const controller = new AbortController();
  const word = abortWord(seq);
  // Aborted while it waited in the queue.
  if (Atomics.load(control, word) === seq) return post({ type: 'aborted', seq });
  post({ type: 'started', seq });
  // Runs a failed or aborted request left behind are not this one's.
  link.runs.take();
  const start = performance.timeOrigin + performance.now();
  const job: Job = {
    seq,
    logger,
    signal: controller.signal,
    step: (done, total) => {
      post({ type: 'progress', seq, step: done, total });
      if (Atomics.load(control, CRASH_WORD) === 1) process.exit(DRILL_EXIT_CODE);
      if (Atomics.load(control, word) === seq) controller.abort(new Aborted('aborted'));
    },
    image: (index, image) => {
      const { wire, transfer } = toWire({ ...image, data: image.data.slice() });
      post({ type: 'image', seq, index, image: wire }, [transfer]);
    },
  };
  try {
    const answer = await handle(job);
    post({ type: 'result', seq, ...answer, span: { start, end: performance.timeOrigin + performance.now() }, onnxRuns: link.runs.take() });
  } catch (err) {
    if (controller.signal.aborted) post({ type: 'aborted', seq });
    else {
      const message = (err as Error).message ?? String(err);
      const fault = classifyRunError(message);
      post({ type: 'failed', seq, name: (err as Error).name ?? 'Error', message, ...(fault ? { fault } : {}) });
    }
  }
}

/**
 * QR art: txt2img + ControlNet, the face pass when asked, the NSFW check. Each image goes to the
 * main thread as soon as it is final, so its scan check and PNG encoding run there while this
 * thread goes on (next image, NSFW check).
 */
async function qrArt(job: Job, sessions: PipelineSessions, plan: InferencePlan): Promise<Omit<Answer, 'type' | 'seq'>> {
  const t0 = performance.now();
  const target = sessions.forWorkflow(plan.workflow, plan.v5Model);
  const perFace = plan.enhanceFace ? faceSteps(plan.steps, target) : 0;
  if (plan.enhanceFace && perFace === 0) job.logger.warn({ model: target.model.id }, facePassBlocker(target));
  // The face pass's steps are counted up front for the most faces it may refine, so the total
  // never changes (with more faces than images it would grow, and the bar go back); once the
  // detector has looked, the steps of faces it did not find count as done.
  const faceTotal = perFace * plan.batchSize * target.model.spec.faceDetector.maxFaces;
  let genTotal = plan.steps;
  // The plan is txt2img's request (the manifest gives native size, refinement and scheduler config).
  const request: Txt2ImgRequest = plan;
  const gen = await generate(request, target, {
    onProgress: (step, total) => {
      genTotal = total;
      job.step(step, total + faceTotal);
    },
    ...(perFace > 0 ? {} : { onImage: job.image }),
    signal: job.signal,
  });
  const timings: Record<string, number> = { ...gen.timings };
  delete timings.total;
  let images = gen.images;
  if (perFace > 0) {
    const f0 = performance.now();
    const squares = await findFaceSquares(images, target);
    timings.face_detect = performance.now() - f0;
    let done = faceTotal - perFace * squares.reduce((n, s) => n + s.length, 0);
    job.step(genTotal + done, genTotal + faceTotal);
    // Its own stages (face_vae_encode, face_denoiser, …) too, so the worker's stage metrics include the pass.
    const faceClock = new StageClock<Txt2ImgStage>();
    images = await enhanceFaces(images, squares, request, target, {
      tick: () => {
        job.step(genTotal + ++done, genTotal + faceTotal);
        job.signal.throwIfAborted();
      },
      onImage: job.image,
      timer: faceClock,
    });
    Object.assign(timings, faceClock.timings);
    timings.face = performance.now() - f0;
  }
  const checker = target.model.nsfw;
  const n0 = performance.now();
  const nsfw = checker ? await detectNsfw(images, checker) : images.map(() => false);
  if (checker) timings.nsfw = performance.now() - n0;
  timings.total = performance.now() - t0;
  return { nsfw, timings, generated: gen.generated };
}

/** Outpainting: one image out, with the caption when the captioner wrote the prompt. */
async function outpainting(job: Job, sessions: PipelineSessions, plan: OutpaintPlan): Promise<Omit<Answer, 'type' | 'seq'>> {
  const result = await outpaint(plan, sessions.forOutpainting(), (step, total) => job.step(step, total), job.signal);
  job.image(0, result.image);
  const timings = Object.fromEntries(Object.entries(result.timings).filter((e): e is [string, number] => e[1] !== undefined));
  return { nsfw: [result.nsfw ?? false], timings, generated: result.working, ...(result.caption !== undefined ? { caption: result.caption } : {}) };
}

async function main(port: MessagePort, data: ThreadData): Promise<void> {
  const post = (msg: FromThread, transfer: ArrayBuffer[] = []): void => port.postMessage(msg, transfer);
  // Log lines travel to the main thread, which writes them through its own logger.
  const logger: Logger = pino({ level: data.logLevel, base: undefined }, { write: (line: string) => post({ type: 'log', line }) });
  const link: Link = { post, control: new Int32Array(data.control), logger, runs: new RunLog() };
  // Warm-up's runs too: the client terminates this thread only while no run is inside ONNX Runtime.
  // In first, then the stop word: the client sets the stop word and then waits for "in" to be 0,
  // so either it sees this run or this run sees the stop (sequentially consistent Atomics).
  setNativeRunMarker({
    enter: () => {
      Atomics.add(link.control, IN_ONNX_RUNTIME_WORD, 1);
      if (Atomics.load(link.control, STOP_RUNS_WORD) === 1) {
        Atomics.sub(link.control, IN_ONNX_RUNTIME_WORD, 1);
        throw new Error('the inference thread is being stopped');
      }
      Atomics.add(link.control, ONNX_RUNS_WORD, 1);
    },
    exit: () => void Atomics.sub(link.control, IN_ONNX_RUNTIME_WORD, 1),
  });
  let sessions: PipelineSessions;
  const started = performance.now();
  try {
    const manifest = await loadManifest(data.manifestPath);
    sessions = await createSessions(manifest, {
      executionProvider: data.executionProvider,
      logger,
      explainFailure: explainGraphFailure,
      ...(data.intraOpThreads !== undefined ? { intraOpThreads: data.intraOpThreads } : {}),
    });
    if (data.warmUp !== false) await warmUp(sessions, data.warmUp, logger);
    // After the warm-up: its runs are not a job's.
    setRunObserver((graph, ms) => link.runs.record(graph.role, ms));
    if (data.faultInjection) {
      installFaults(parseFaultSpec(data.faultInjection));
      logger.warn({ rules: data.faultInjection }, 'fault injection is on (QR_ART_FAULT_INJECTION): runs will fail on purpose');
    }
  } catch (err) {
    post({ type: 'init-error', name: (err as Error).name, message: (err as Error).message });
    return;
  }
  for (const m of sessions.models.values()) {
    // Only a manifest that says so explicitly gets here (manifest.ts refuses a model that just lacks the graph).
    if (m.spec.nsfw.checker === 'none') logger.warn({ model: m.id }, `models.${m.id}.nsfw.checker is "none": images of this model are not checked for NSFW content`);
    if (!m.graphs.face_detector) logger.warn({ model: m.id }, `models.${m.id} lists no graphs.face_detector: enhance=face leaves its images as they are`);
  }
  let chain = Promise.resolve();
  port.on('message', (msg: ToThread) => {
    if (msg.type === 'run') chain = chain.then(() => serve(link, msg, (job) => qrArt(job, sessions, { ...msg.plan, control: fromWire(msg.plan.control) })));
    if (msg.type === 'outpaint') chain = chain.then(() => serve(link, msg, (job) => outpainting(job, sessions, { ...msg.plan, image: fromWire(msg.plan.image) })));
  });
  post({ type: 'ready', provider: sessions.provider, ms: Math.round(performance.now() - started) });
}

// Only as the client's thread: importing this module elsewhere (tests) just gives its exports.
const data = workerData as ThreadData | null;
if (parentPort && data?.role === THREAD_ROLE) await main(parentPort, data);
