/**
 * Scan robustness of generated QR art, before and after the repair (src/qr/guarantee.ts).
 *   npm run bench -- scan [--images N] [--mode on_failure|always] [--steps S] [--seed S] [--out DIR] [--threads T]
 *
 * Generates N images (default 200) with the demo graphs through the worker's own path
 * (controlPlanFor -> jobControlImage -> settingsFor -> the inference thread), over a seeded mix
 * of workflows (v4 family, v5, v5s), models, prompts (their colours: light, dark, saturated),
 * patterns, aspect ratios, code sizes and positions, ControlNet strengths and contents (code
 * versions). Sampling runs --steps steps (default 4, below the API's minimum for v4/v5: the demo
 * graphs' art is as smooth at 4 steps as at 30, and 200 images then take a few minutes on two
 * cores). Each image goes through ensureScannable at the given level, as the worker does. Every
 * image, before and after, is then:
 *   - scan-checked as delivered (our scanCheck: ZXing + jsQR ladder), and
 *   - photographed (test/qr/phone-capture.ts: framed, code ~300 px, rotation, perspective, blur,
 *     flatter contrast, noise, JPEG 60-75; the same capture before and after) and decoded by
 *     ZBar and OpenCV (referees we did not write) and by our scanCheck.
 * A decode counts only when it is exactly the encoded text. The plain control image goes
 * through the same capture once per job, to show the capture itself is fair.
 *
 * Visual cost, over the images that were repaired: SSIM after vs before (whole image, and the
 * code's square alone) and the share of pixels changed.
 *
 * Targets: every image reported scannable (isScanables) decodes under capture by ZBar and by
 * OpenCV; >= 99.5% of all images scannable after repair; mean SSIM after vs before >= 0.90.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import sharp from 'sharp';
import { encodePng } from '../../src/image/decode.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { ensureScannable, isRepairMode, type GuaranteeResult, type RepairMode } from '../../src/qr/guarantee.ts';
import { checkModules } from '../../src/qr/repair.ts';
import { scanCheck } from '../../src/qr/scan.ts';
import { jobControlImage, type JobControlImage } from '../../src/worker/control-image-runner.ts';
import { settingsFor } from '../../src/worker/diffusion-runner.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import type { InferenceResult } from '../../src/worker/inference-protocol.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { QR_CODE_PATTERNS, V5_MODELS } from '../../src/workflows/catalogue.ts';
import { controlPlanFor } from '../../src/workflows/control.ts';
import type { QrWorkflowName } from '../../src/workflows/names.ts';
import { ASPECT_RATIOS } from '../../src/workflows/sizes.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { opencvDecode, zbarDecode } from '../../test/helpers/independent-decoders.ts';
import { captureParams, simulateCapture, type Square } from '../../test/qr/phone-capture.ts';
import { changedShare, ssimWhereChanged } from '../../test/qr/image-metrics.ts';
import { summarize } from './scan-check.ts';

const { values } = parseArgs({
  options: {
    images: { type: 'string', default: '200' },
    mode: { type: 'string', default: 'on_failure' },
    steps: { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string' },
    threads: { type: 'string', default: '1' },
  },
  allowPositionals: true,
});
const total = Number(values.images);
const seed = Number(values.seed);
const mode = values.mode as RepairMode;
const steps = Number(values.steps);
if (!(Number.isInteger(total) && total >= 1)) throw new Error('--images must be a positive integer');
if (!(Number.isInteger(steps) && steps >= 1)) throw new Error('--steps must be a positive integer');
if (!isRepairMode(mode) || mode === 'off') throw new Error('--mode must be on_failure or always');
sharp.concurrency(1);

// ---------------------------------------------------------------------------------------------
// The jobs

const SUBJECTS = ['a koi pond', 'a castle on a hill', 'autumn forest', 'city at night', 'sunflowers', 'ocean waves', 'a fox in snow', 'neon alley', 'desert dunes', 'a bowl of fruit'];
// The demo text encoder colours the art by these words: light, dark and saturated palettes.
const COLOURS = ['red', 'orange', 'yellow', 'green', 'cyan', 'blue', 'purple', 'pink', 'brown', 'white', 'grey', 'black'];
const CONTENTS = [
  'https://example.com',
  'https://qr-art.example/p/8f14e45f',
  'HELLO WORLD 12345',
  'tel:+15551234567',
  'https://shop.example.com/products/winter-jacket?utm_source=qr&utm_medium=print',
  'WIFI:T:WPA;S:Cafe Corner;P:espresso-4-all;;',
  'https://example.org/a/very/long/path/that/makes/the/code/denser?with=query&and=more&params=1234567890',
  'mailto:hello@example.com?subject=QR%20art',
];

interface Job {
  readonly body: Record<string, unknown>;
  readonly images: number;
}

function jobs(count: number, random: () => number): Job[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const between = (a: number, b: number) => Math.round((a + (b - a) * random()) * 100) / 100;
  const out: Job[] = [];
  let left = count;
  for (let i = 0; left > 0; i++) {
    const images = Math.min(left, 1 + Math.floor(random() * 4));
    left -= images;
    const prompt = `${pick(SUBJECTS)}, ${pick(COLOURS)} and ${pick(COLOURS)}`;
    const content = `${pick(CONTENTS)}${random() < 0.5 ? `#${i}` : ''}`;
    const r = random();
    let body: Record<string, unknown>;
    if (r < 0.35) {
      // v4 family: the native canvas, pattern s1, code at 0.8; steps as low as allowed.
      const workflow = pick(['generate_qr_art_v4s', 'generate_qr_art_v4real', 'generate_qr_art_v4niji', 'generate_qr_art_v4dream'] as const);
      body = { workflow, qrText: prompt, qrContent: content, qrStrength: between(0.6, 1.6), qrSteps: 10, batchSize: images };
    } else {
      const workflow = r < 0.7 ? 'generate_qr_art_v5s' : 'generate_qr_art_v5';
      const fast = workflow === 'generate_qr_art_v5s';
      const qrRatio = between(0.4, 0.95);
      body = {
        workflow,
        prompt,
        qrContent: content,
        steps: fast ? 4 : 10,
        cfg: fast ? between(1, 2.5) : between(4, 8),
        qrStrength: between(0.6, 1.6),
        model: pick(V5_MODELS),
        aspectRatio: pick(ASPECT_RATIOS),
        // HD runs the upscale + refine pass: a few of them, SD for the rest.
        resolution: random() < 0.1 ? 'HD' : 'SD',
        qrCodePartern: pick(QR_CODE_PATTERNS),
        qrRatio,
        batchSize: images,
      };
    }
    body.seed = Math.floor(random() * 1e9);
    out.push({ body, images });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Per-image evaluation

interface Reads {
  /** scanCheck on the image as delivered. */
  readonly plain: boolean;
  /** After simulated capture: our scanCheck, ZBar, OpenCV. */
  readonly scan: boolean;
  readonly zbar: boolean;
  readonly opencv: boolean;
}

const exactly = (texts: readonly string[], expected: string) => texts.length > 0 && texts.every((t) => t === expected);

function toRgb(image: RawImage): RawImage {
  if (image.channels === 3) return image;
  const data = new Uint8Array(image.width * image.height * 3);
  for (let i = 0; i < image.width * image.height; i++) data[3 * i] = data[3 * i + 1] = data[3 * i + 2] = image.data[i * image.channels]!;
  return rawImage(data, image.width, image.height, 3);
}

async function reads(image: RawImage, expected: string, codeSide: number, square: Square, captureSeed: number, plain?: boolean): Promise<Reads> {
  const capture = await simulateCapture(image, square, captureParams(captureSeed), captureSeed);
  const codeInCapture = (capture.codeSide * codeSide) / square.side;
  return {
    plain: plain ?? (await scanCheck(image, expected, { codeSide })).scannable,
    scan: (await scanCheck(capture.image, expected, { codeSide: codeInCapture })).scannable,
    zbar: exactly(await zbarDecode(capture.image), expected),
    opencv: exactly(await opencvDecode(capture.image), expected),
  };
}

interface Row {
  readonly workflow: string;
  readonly size: string;
  readonly version: number;
  readonly before: Reads;
  readonly after: Reads;
  readonly result: Omit<GuaranteeResult, 'image' | 'verdict'>;
  readonly guaranteeMs: number;
  readonly moduleMs: number;
  readonly ssim?: number;
  readonly ssimCode?: number;
  readonly changed?: number;
  readonly changedCode?: number;
}

// ---------------------------------------------------------------------------------------------
// Run

const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
const client = await InferenceClient.start({ manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger, intraOpThreads: Number(values.threads) });
const random = mulberry32(seed);
const list = jobs(total, random);
const rows: Row[] = [];
const controlReads: Array<{ zbar: boolean; opencv: boolean; scan: boolean }> = [];
if (values.out) await mkdir(values.out, { recursive: true });
const abort = new AbortController();

interface Prepared {
  readonly job: Job;
  readonly workflow: QrWorkflowName;
  readonly control: JobControlImage;
  readonly generation: Promise<InferenceResult>;
}

function start(job: Job, index: number): Promise<Prepared> {
  const parsed = parseCreateBody(job.body, { allowPrivateUrls: false });
  if (!parsed.ok) throw new Error(`job ${index}: ${JSON.stringify(parsed.issues)}`);
  const { workflow, input, imageCount } = parsed.value;
  const plan = controlPlanFor(workflow, input);
  if (plan.kind !== 'content') throw new Error(`job ${index}: ${workflow} has no content plan`);
  return jobControlImage(plan, { policy: { allowPrivate: false } }, abort.signal).then((control) => {
    const settings = settingsFor(client.manifest, workflow as QrWorkflowName, input, imageCount);
    const generation = client.run({ ...settings, steps, control: control.image, width: plan.canvas.width, height: plan.canvas.height });
    return { job, workflow: workflow as QrWorkflowName, control, generation };
  });
}

const t0 = performance.now();
let next = start(list[0]!, 0);
let written = 0;
for (let j = 0; j < list.length; j++) {
  const current = await next;
  const result = await current.generation;
  // The next generation runs in the inference thread while this one is evaluated here.
  if (j + 1 < list.length) next = start(list[j + 1]!, j + 1);
  const { control, workflow } = current;
  const { expected, codeSide, geometry } = control;
  if (!geometry) throw new Error('content plans have geometry');
  const square = geometry.layout.placement;
  const codeRect = { x: square.x, y: square.y, width: square.side, height: square.side };
  const controlRgb = toRgb(control.image);
  const controlCapture = await simulateCapture(controlRgb, square, captureParams(seed * 7919 + j), j);
  controlReads.push({
    scan: (await scanCheck(controlCapture.image, expected, { codeSide: (controlCapture.codeSide * codeSide) / square.side })).scannable,
    zbar: exactly(await zbarDecode(controlCapture.image), expected),
    opencv: exactly(await opencvDecode(controlCapture.image), expected),
  });
  for (const [k, image] of result.images.entries()) {
    const captureSeed = seed * 1_000_003 + rows.length;
    // The module check alone, for its cost (the guarantee runs it once per image and once per pass).
    const m0 = performance.now();
    checkModules(image, geometry);
    const moduleMs = performance.now() - m0;
    const g0 = performance.now();
    const guaranteed = await ensureScannable(image, expected, geometry, mode, { codeSide });
    const guaranteeMs = performance.now() - g0;
    const before = await reads(image, expected, codeSide, square, captureSeed);
    const repaired = guaranteed.image !== image;
    const after = repaired ? await reads(guaranteed.image, expected, codeSide, square, captureSeed, guaranteed.scannable) : { ...before, plain: guaranteed.scannable };
    const { image: _image, verdict: _verdict, ...summary } = guaranteed;
    rows.push({
      workflow,
      size: `${image.width}x${image.height}`,
      version: geometry.matrix.version,
      before,
      after,
      result: summary,
      guaranteeMs,
      moduleMs,
      ...(repaired
        ? {
            ...(({ whole, inner }) => ({ ssim: whole, ssimCode: inner }))(ssimWhereChanged(image, guaranteed.image, codeRect, codeRect)),
            changed: changedShare(image, guaranteed.image),
            changedCode: changedShare(image, guaranteed.image, codeRect),
          }
        : {}),
    });
    const failed = (guaranteed.scannable && !(after.zbar && after.opencv)) || !guaranteed.scannable;
    if (values.out && (failed || (repaired && written < 24))) {
      const name = `${String(rows.length - 1).padStart(3, '0')}-${workflow.replace('generate_qr_art_', '')}-${k}`;
      await writeFile(join(values.out, `${name}-before.png`), await encodePng(image));
      if (failed) {
        // Enough to replay the case: the raw pixels and the geometry.
        await writeFile(join(values.out, `${name}.rgb`), image.data);
        const { matrix, layout } = geometry;
        const pattern = String((parseCreateBody(current.job.body, { allowPrivateUrls: false }) as { value?: { input: Record<string, unknown> } }).value?.input.qrCodePartern ?? 's1');
        await writeFile(
          join(values.out, `${name}.json`),
          JSON.stringify({ width: image.width, height: image.height, expected, codeSide, workflow, pattern, matrix: { ...matrix, dark: [...matrix.dark], role: [...matrix.role] }, layout }),
        );
      }
      if (repaired) await writeFile(join(values.out, `${name}-after.png`), await encodePng(guaranteed.image));
      written++;
    }
  }
  process.stderr.write(`\r${rows.length}/${total} images`);
}
process.stderr.write('\n');
await client.close();
const wallS = (performance.now() - t0) / 1000;

// ---------------------------------------------------------------------------------------------
// Report

const pct = (n: number, d: number) => (d === 0 ? 'n/a' : `${((100 * n) / d).toFixed(1)}%`);
const count = <T>(xs: readonly T[], f: (x: T) => boolean) => xs.filter(f).length;
const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function rateRow(name: string, reads: readonly Reads[]) {
  const n = reads.length;
  return {
    images: name,
    'scanCheck (as delivered)': pct(count(reads, (r) => r.plain), n),
    'capture: scanCheck': pct(count(reads, (r) => r.scan), n),
    'capture: ZBar': pct(count(reads, (r) => r.zbar), n),
    'capture: OpenCV': pct(count(reads, (r) => r.opencv), n),
    'capture: ZBar and OpenCV': pct(count(reads, (r) => r.zbar && r.opencv), n),
    'capture: ZBar or OpenCV': pct(count(reads, (r) => r.zbar || r.opencv), n),
  };
}

const reported = rows.filter((r) => r.result.scannable);
const repairedRows = rows.filter((r) => r.result.repaired);
console.log(`\nScan robustness: ${rows.length} images from ${list.length} jobs (demo graphs, ${steps} steps, CPU), repair level ${mode}, seed ${seed}, Node ${process.version}, ${wallS.toFixed(0)} s`);
console.table([
  rateRow('before repair', rows.map((r) => r.before)),
  rateRow(`after repair (${mode})`, rows.map((r) => r.after)),
  rateRow('after, isScanables = true', reported.map((r) => r.after)),
  {
    images: 'plain control image (reference)',
    'scanCheck (as delivered)': '',
    'capture: scanCheck': pct(count(controlReads, (r) => r.scan), controlReads.length),
    'capture: ZBar': pct(count(controlReads, (r) => r.zbar), controlReads.length),
    'capture: OpenCV': pct(count(controlReads, (r) => r.opencv), controlReads.length),
    'capture: ZBar and OpenCV': pct(count(controlReads, (r) => r.zbar && r.opencv), controlReads.length),
    'capture: ZBar or OpenCV': pct(count(controlReads, (r) => r.zbar || r.opencv), controlReads.length),
  },
]);

const byFamily = new Map<string, Row[]>();
for (const r of rows) {
  const family = r.workflow.startsWith('generate_qr_art_v5') ? r.workflow.replace('generate_qr_art_', '') : 'v4 family';
  byFamily.set(family, [...(byFamily.get(family) ?? []), r]);
}
console.table(
  [...byFamily].map(([family, rs]) => ({
    family,
    images: rs.length,
    'scannable before': pct(count(rs, (r) => r.before.plain), rs.length),
    'scannable after': pct(count(rs, (r) => r.after.plain), rs.length),
    repaired: pct(count(rs, (r) => r.result.repaired), rs.length),
    'after, capture: ZBar and OpenCV': pct(count(rs, (r) => r.after.zbar && r.after.opencv), rs.length),
  })),
);

const ms = summarize(rows.map((r) => r.guaranteeMs));
const moduleMs = summarize(rows.map((r) => r.moduleMs));
const passes = [0, 1, 2, 3, 4].map((p) => `${p}: ${count(rows, (r) => r.result.passes === p)}`).filter((s) => !s.endsWith(': 0'));
const meanSsim = mean(repairedRows.map((r) => r.ssim!));
console.table([
  { figure: 'images repaired', value: `${repairedRows.length}/${rows.length} (${pct(repairedRows.length, rows.length)})` },
  { figure: 'repair passes (images per count)', value: passes.join(', ') },
  { figure: 'modules changed per repaired image (mean / median)', value: `${mean(repairedRows.map((r) => r.result.changedModules)).toFixed(0)} / ${summarize(repairedRows.map((r) => r.result.changedModules)).medianMs}` },
  { figure: 'modules changed, all images', value: String(rows.reduce((s, r) => s + r.result.changedModules, 0)) },
  { figure: 'pixels changed, repaired images (whole image / code square)', value: `${(100 * mean(repairedRows.map((r) => r.changed!))).toFixed(2)}% / ${(100 * mean(repairedRows.map((r) => r.changedCode!))).toFixed(2)}%` },
  { figure: 'SSIM after vs before, repaired images (whole image / code square, mean)', value: `${meanSsim.toFixed(4)} / ${mean(repairedRows.map((r) => r.ssimCode!)).toFixed(4)}` },
  { figure: 'SSIM, worst repaired image (whole / code square)', value: `${Math.min(...repairedRows.map((r) => r.ssim!)).toFixed(4)} / ${Math.min(...repairedRows.map((r) => r.ssimCode!)).toFixed(4)}` },
  { figure: 'ensureScannable ms per image (median / p95)', value: `${ms.medianMs.toFixed(1)} / ${ms.p95Ms.toFixed(1)}` },
  { figure: 'module check alone ms (median / p95)', value: `${moduleMs.medianMs.toFixed(1)} / ${moduleMs.p95Ms.toFixed(1)}` },
]);

const reportedOk = count(reported, (r) => r.after.zbar && r.after.opencv);
const scannableAfter = count(rows, (r) => r.result.scannable);
const targets = [
  [`isScanables=true images decoding under capture by ZBar and OpenCV: ${reportedOk}/${reported.length} (${pct(reportedOk, reported.length)}; target 100%)`, reportedOk === reported.length],
  [`scannable after repair: ${scannableAfter}/${rows.length} (${pct(scannableAfter, rows.length)}; target >= 99.5%)`, scannableAfter / rows.length >= 0.995],
  [`mean SSIM after vs before (repaired images, whole image): ${meanSsim.toFixed(4)} (target >= 0.90)`, !(meanSsim < 0.9)],
] as const;
for (const [text, met] of targets) console.log(`${met ? 'MET    ' : 'MISSED '} ${text}`);
const unscannable = rows.map((r, i) => ({ i, r })).filter(({ r }) => !r.result.scannable);
if (unscannable.length) console.log(`not scannable after repair: ${unscannable.map(({ i, r }) => `#${i} ${r.workflow} ${r.size} v${r.version} passes=${r.result.passes}`).join('; ')}`);
const misses = rows.map((r, i) => ({ i, r })).filter(({ r }) => r.result.scannable && !(r.after.zbar && r.after.opencv));
if (misses.length) console.log(`reported scannable but not read by both referees after capture: ${misses.map(({ i, r }) => `#${i} ${r.workflow} ${r.size} v${r.version} zbar=${r.after.zbar} opencv=${r.after.opencv}`).join('; ')}`);
