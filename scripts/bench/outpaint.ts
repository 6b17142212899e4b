/**
 * The outpainting pipeline in-process (src/pipeline/outpaint.ts with createSessions, no worker
 * thread): a 512×512 image padded to 1024×768 (256 left/right, 128 top/bottom), captioned (no
 * prompt), one_shot and multi_shots.
 *   npm run bench -- outpaint [--runs N] [--steps S] [--heavy] [--convs K] [--threads T] [--prompt TEXT]
 *
 * Figures per type:
 *   - stage medians (ms) from outpaint()'s timings, UNet and scheduler also per step;
 *   - model time: the sum of ONNX Runtime session.run() wall times inside the run, measured by
 *     wrapping InferenceSession.prototype.run in this process (the same measurement the worker
 *     bench's ort-run-timing.cjs preload makes inside the inference thread), per graph;
 *   - overhead ratio = run wall time / model time, and non-model ms = wall − model time.
 * Target: overhead ratio <= 1.05 with --heavy (a 9-channel inpainting UNet with a stack of
 * C=320 3×3 convolutions at latent resolution, scripts/demo-models/heavy-unet.ts, same outputs
 * as the demo one). Default: 3 runs per type after one warm-up, the manifest's steps, one ONNX thread.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import sharp from 'sharp';
import { writeHeavyModels } from '../demo-models/heavy-unet.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { outpaint, outpaintPlan, type OutpaintRequest, type OutpaintResult } from '../../src/pipeline/outpaint.ts';
import { createSessions } from '../../src/pipeline/sessions.ts';
import type { OutpaintingType } from '../../src/workflows/catalogue.ts';
import { wholeNumber } from './usage-error.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    steps: { type: 'string' },
    heavy: { type: 'boolean', default: false },
    convs: { type: 'string', default: '1' },
    threads: { type: 'string', default: '1' },
    prompt: { type: 'string' },
  },
  allowPositionals: true,
});
const runs = wholeNumber('runs', values.runs, 1);
const threads = wholeNumber('threads', values.threads, 1);
const steps = values.steps === undefined ? undefined : wholeNumber('steps', values.steps, 1);
const convs = wholeNumber('convs', values.convs, 1);
sharp.concurrency(threads);

// Every session.run() in this process, attributed to its graph role afterwards.
interface OrtRun {
  readonly start: number;
  readonly end: number;
  readonly session: ort.InferenceSession;
}
const ortRuns: OrtRun[] = [];
// The factory type hides the class; its prototype is where onnxruntime-common defines run().
const proto = (ort.InferenceSession as unknown as { prototype: ort.InferenceSession }).prototype;
const originalRun = proto.run;
proto.run = async function (this: ort.InferenceSession, ...args: Parameters<typeof originalRun>) {
  const start = performance.now();
  try {
    return await originalRun.apply(this, args);
  } finally {
    ortRuns.push({ start, end: performance.now(), session: this });
  }
} as typeof originalRun;

let tempDir: string | undefined;
let manifestFile = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));
if (values.heavy) {
  tempDir = await mkdtemp(join(tmpdir(), 'qr-art-heavy-inpaint-'));
  manifestFile = await writeHeavyModels(tempDir, { convs, channels: 320, inpaint: true });
}
const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
const sessions = await createSessions(await loadManifest(manifestFile), { executionProvider: { provider: 'cpu' }, logger, intraOpThreads: threads });
const target = sessions.forOutpainting();
const roleOf = new Map<ort.InferenceSession, string>();
for (const [role, g] of Object.entries(target.model.graphs)) if (g) roleOf.set(g.session, role);

/** A 512×512 test picture: a sky-to-ground gradient with a sun, so the caption and fill have something to follow. */
function benchImage(): RawImage {
  const size = 512;
  const data = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const p = (y * size + x) * 3;
      const sun = (x - 320) ** 2 + (y - 180) ** 2 < 90 ** 2;
      const t = y / size;
      data[p] = sun ? 245 : Math.round(40 + 120 * t);
      data[p + 1] = sun ? 200 : Math.round(110 + 40 * Math.sin(x / 40));
      data[p + 2] = sun ? 40 : Math.round(200 - 120 * t);
    }
  }
  return rawImage(data, size, size, 3);
}

const image = benchImage();
const request = (type: OutpaintingType, seed: number): OutpaintRequest => ({
  image,
  padding: { left: 256, right: 256, top: 128, bottom: 128 },
  type,
  seed,
  ...(values.prompt !== undefined ? { prompt: values.prompt } : {}),
  ...(steps !== undefined ? { tuning: { steps } } : {}),
});

interface RunRecord {
  readonly wall: number;
  readonly model: number;
  readonly calls: number;
  readonly byGraph: Record<string, number>;
  readonly result: OutpaintResult;
}

async function measure(type: OutpaintingType, seed: number): Promise<RunRecord> {
  ortRuns.length = 0;
  const start = performance.now();
  const result = await outpaint(request(type, seed), target);
  const wall = performance.now() - start;
  const byGraph: Record<string, number> = {};
  for (const r of ortRuns) {
    const role = roleOf.get(r.session) ?? 'other';
    byGraph[role] = (byGraph[role] ?? 0) + (r.end - r.start);
  }
  return { wall, model: ortRuns.reduce((s, r) => s + (r.end - r.start), 0), calls: ortRuns.length, byGraph, result };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const fmt = (v: number): string => v.toFixed(1);

const verdicts: string[] = [];
for (const type of ['one_shot', 'multi_shots'] as const) {
  const plan = outpaintPlan(request(type, 0), target);
  await measure(type, 999); // warm-up: JIT, ORT arenas at these sizes
  const records: RunRecord[] = [];
  for (let i = 0; i < runs; i++) records.push(await measure(type, 1000 + i));
  const r0 = records[0]!.result;
  const totalSteps = r0.steps * r0.passes;
  const stage = (key: string, per = 1): string => fmt(median(records.map((r) => (r.result.timings[key as keyof typeof r.result.timings] ?? 0) / per)));
  const graph = (role: string, per = 1): string => fmt(median(records.map((r) => (r.byGraph[role] ?? 0) / per)));
  const row = (name: string, ms: string, model = ''): Record<string, string> => ({ stage: name, 'median ms': ms, 'session.run median ms': model });
  console.log(
    `\nOutpaint ${type}: 512x512 → ${r0.image.width}x${r0.image.height} (working ${r0.working.width}x${r0.working.height}, ` +
      `${r0.passes} pass(es) ${plan.passes.map((p) => `${p.width}x${p.height}`).join(' → ')}, ${r0.steps} steps each), ` +
      `${values.heavy ? `HEAVY inpaint UNet (${values.convs}×conv3x3 C=320)` : 'demo graphs'}, CPU, ${threads} ONNX thread(s), ${runs} runs, Node ${process.version}` +
      (r0.caption !== undefined ? `; caption "${r0.caption}"` : ''),
  );
  console.table([
    row('caption (encoder + decoder loop)', stage('caption'), fmt(median(records.map((r) => (r.byGraph.captioner_encoder ?? 0) + (r.byGraph.captioner_decoder ?? 0))))),
    row('canvas (resize + place)', stage('canvas')),
    row('tokenize + text encoder', stage('tokenize_text_encoder'), graph('text_encoder')),
    row('masks + masked image (JS)', stage('mask')),
    row('VAE encode (masked image)', stage('vae_encode'), graph('vae_encoder')),
    row('inpaint UNet, per step', stage('unet', totalSteps), graph('unet_inpaint', totalSteps)),
    row('inpaint UNet, all steps', stage('unet'), graph('unet_inpaint')),
    row('scheduler + CFG, per step', stage('scheduler', totalSteps)),
    row('VAE decode', stage('vae_decode'), graph('vae_decoder')),
    row('composite (JS)', stage('composite')),
    row('to output (crop / resize)', stage('to_output')),
    row('paste original (JS)', stage('paste')),
    row('NSFW (crop + checker)', stage('nsfw'), graph('safety_checker')),
    row('outpaint total', stage('total')),
    row('run wall (bench)', fmt(median(records.map((r) => r.wall))), fmt(median(records.map((r) => r.model)))),
    row('non-model = wall − session.run', fmt(median(records.map((r) => r.wall - r.model)))),
  ]);
  const ratio = median(records.map((r) => r.wall / r.model));
  console.log(`session.run calls per run ${records[0]!.calls}; overhead ratio (wall / session.run) ${ratio.toFixed(3)}`);
  verdicts.push(
    values.heavy ? `${type} overhead ratio ${ratio.toFixed(3)} (<= 1.05): ${ratio <= 1.05 ? 'MET' : 'MISSED'}` : `${type} overhead ratio ${ratio.toFixed(2)} (target applies to --heavy only)`,
  );
}
await sessions.release();
if (tempDir) await rm(tempDir, { recursive: true, force: true });
console.log(`\ntargets: ${verdicts.join('; ')}`);
