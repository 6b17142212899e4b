/**
 * Scan robustness of generated QR art under the capture family, before and after the repair
 * (src/qr/guarantee.ts).
 *   npm run bench -- scan [--images N] [--mode on_failure|always] [--steps S] [--seed S] [--held-out H] [--out DIR] [--pairs DIR] [--threads T]
 *                         [--cache DIR] [--shard I/N --rows FILE] [--whole-image W] [--imagemagick M]
 *   npm run bench -- scan --merge FILE,FILE,...   (one report over the shards' rows)
 *   npm run bench -- scan --timing          (what the family verdict costs at 512, 768, 2048 px)
 *   npm run bench -- scan --calibrate       (plain control images of every pattern under the family)
 *
 * Generates N images (default 300) with the demo graphs through the worker's own path
 * (controlPlanFor -> jobControlImage -> settingsFor -> the inference thread) over the seeded mix
 * of scan-jobs.ts. Sampling runs --steps steps (default 4: the demo graphs' art is as smooth at 4
 * steps as at 30). Each image goes through ensureScannable at the given level, as the worker
 * does; the verdict is the family verdict (src/qr/robustness.ts: scan check + the check's 12
 * captures, seed CHECK_SEED). Then, before and after the repair:
 *   - the family verdict and robustness (share of the check's captures read);
 *   - H held-out captures (default 3) from the same family drawn with OTHER seeds (one per
 *     image, never CHECK_SEED), the same captures before and after, decoded by ZBar, OpenCV and,
 *     where it is installed, Java ZXing (referees we did not write; zxing-java.ts). A decode
 *     counts only when it is exactly the encoded text.
 * The plain control image of every job gets the family verdict (calibration: it should pass) and
 * the same held-out referees. --whole-image W (default 4; 0: none) adds W captures of another
 * model, written apart from the family (scan-whole-image.ts), of every delivered isScanables image
 * and of every plain control image, read by ZBar and Java ZXing. --imagemagick M (default 0) adds M
 * photos made by ImageMagick and read by Debian's zbarimg and Java ZXing (scan-imagemagick.ts;
 * `apt-get install imagemagick zbar-tools`), of the same images.
 *
 * --cache DIR keeps the generated images (PNG, named by the job's body and its control image)
 * and reuses them, so a change to the repair is measured on the very same images without
 * generating them again; a change to the control image (the encoder's mask) misses the cache.
 * --shard I/N evaluates jobs I, I+N, I+2N, ... only (0-based) and --rows writes its rows to FILE;
 * run N shards side by side (one per core) and --merge their files: the same figures as one run.
 *
 * --out DIR writes the images a referee or the verdict missed (before and after the repair);
 * --pairs DIR writes every repaired image before and after, with pairs-I.json (shard I) giving
 * each pair's SSIM and share of pixels changed: scripts/render-repair-sheet.ts lays them side by
 * side.
 *
 * Visual cost: SSIM (after vs before, whole image and the code's square) and share of pixels
 * changed, over the repaired images (and over all images, unrepaired ones counting as 1).
 *
 * Targets: >= 99.5% of all images scannable after repair; every isScanables=true image read by
 * ZBar and by OpenCV under held-out captures; mean SSIM after vs before >= 0.92 over the image
 * and >= 0.80 over the code's square.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import sharp from 'sharp';
import { decodeImage, encodePng } from '../../src/image/decode.ts';
import type { RawImage } from '../../src/image/raw.ts';
import { captureOf, captureSubject, familyParams, type Square } from '../../src/qr/capture-family.ts';
import { ensureScannable, SPARE_CHECK_SEED } from '../../src/qr/guarantee.ts';
import { isQrRepairMode, type QrRepairMode } from '../../src/qr/repair-modes.ts';
import { CHECK_SEED, familyVerdict } from '../../src/qr/robustness.ts';
import { jobControlImage, type JobControlImage } from '../../src/worker/control-image-runner.ts';
import { settingsFor } from '../../src/worker/diffusion-runner.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import type { InferenceResult } from '../../src/worker/inference-protocol.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { controlPlanFor } from '../../src/workflows/control.ts';
import type { QrWorkflowName } from '../../src/workflows/names.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';
import { opencvDecode, zbarDecode } from '../../test/helpers/independent-decoders.ts';
import { changedShare, ssimWhereChanged } from '../../test/qr/image-metrics.ts';
import { benchJobs, type Job } from './scan-jobs.ts';
import { ZxingJavaReferee, zxingJavaAvailable } from './zxing-java.ts';
import { wholeImageReads, type WholeImageReads } from './scan-whole-image.ts';
import { imageMagickModelAvailable, imageMagickReads, type ImageMagickReads } from './scan-imagemagick.ts';
import { report, type Judged, type RepairPair, type Report, type Referees, type Row } from './scan-report.ts';
import { benchCalibration } from './scan-calibration.ts';
import { benchVerdictTiming } from './scan-timing.ts';
import { BenchUsageError, wholeNumber } from './usage-error.ts';

const { values } = parseArgs({
  options: {
    images: { type: 'string', default: '300' },
    mode: { type: 'string', default: 'on_failure' },
    steps: { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
    'held-out': { type: 'string', default: '3' },
    'whole-image': { type: 'string', default: '4' },
    imagemagick: { type: 'string', default: '0' },
    out: { type: 'string' },
    pairs: { type: 'string' },
    threads: { type: 'string', default: '1' },
    timing: { type: 'boolean', default: false },
    calibrate: { type: 'boolean', default: false },
    cache: { type: 'string' },
    shard: { type: 'string', default: '0/1' },
    rows: { type: 'string' },
    merge: { type: 'string' },
  },
  allowPositionals: true,
});
sharp.concurrency(1);
if (values.timing || values.calibrate) {
  if (values.timing) await benchVerdictTiming();
  if (values.calibrate) await benchCalibration();
  process.exit(0);
}
if (values.merge) {
  const files = values.merge.split(',');
  const parts = await Promise.all(
    files.map(async (file) => {
      try {
        return JSON.parse(await readFile(file, 'utf8')) as Report;
      } catch (error) {
        throw new BenchUsageError(`--merge: cannot read ${file} as a shard's rows: ${(error as Error).message}`);
      }
    }),
  );
  checkShards(files, parts);
  const rows = parts.flatMap((p) => p.rows).sort((a, b) => a.index - b.index);
  const controls = parts.flatMap((p) => p.controls);
  report({ ...parts[0]!, rows, controls, jobs: parts.reduce((n, p) => n + p.jobs, 0), wallS: Math.max(...parts.map((p) => p.wallS)) });
  process.exit(0);
}
const total = Number(values.images);
const seed = Number(values.seed);
if (!(Number.isInteger(seed) && seed >= 1)) throw new BenchUsageError('--seed must be a positive integer');
const mode = values.mode as QrRepairMode;
const steps = Number(values.steps);
const heldOut = Number(values['held-out']);
const wholeImage = Number(values['whole-image']);
if (!(Number.isInteger(total) && total >= 1)) throw new BenchUsageError('--images must be a positive integer');
if (!(Number.isInteger(steps) && steps >= 1)) throw new BenchUsageError('--steps must be a positive integer');
if (!(Number.isInteger(heldOut) && heldOut >= 1)) throw new BenchUsageError('--held-out must be a positive integer');
if (!(Number.isInteger(wholeImage) && wholeImage >= 0)) throw new BenchUsageError('--whole-image must be a whole number');
const threads = wholeNumber('threads', values.threads, 1, 256);
const magick = Number(values.imagemagick);
if (!(Number.isInteger(magick) && magick >= 0)) throw new BenchUsageError('--imagemagick must be a whole number');
if (magick > 0 && !imageMagickModelAvailable()) throw new BenchUsageError('--imagemagick needs ImageMagick and zbarimg: apt-get install imagemagick zbar-tools');
if (!isQrRepairMode(mode) || mode === 'off') throw new BenchUsageError('--mode must be on_failure or always');
const [shard, shards] = values.shard.split('/').map(Number) as [number, number];
if (!(Number.isInteger(shards) && shards >= 1 && Number.isInteger(shard) && shard >= 0 && shard < shards)) throw new BenchUsageError('--shard must be I/N with 0 <= I < N');

/** Held-out family seeds: far from CHECK_SEED, one per image (and per control image). */
const heldOutSeed = (index: number) => 1_000_003 * seed + 7 * index + 100;
if ([CHECK_SEED, SPARE_CHECK_SEED].some((s) => s >= heldOutSeed(0))) throw new Error("held-out seeds must differ from the check's seeds");

const exactly = (texts: readonly string[], expected: string) => texts.length > 0 && texts.every((t) => t === expected);

const zxingJava = zxingJavaAvailable() ? new ZxingJavaReferee() : undefined;
if (!zxingJava) process.stderr.write('Java ZXing is not installed (apt-get install default-jre-headless libzxing-core-java): its referee column is left out\n');

/** ZBar, OpenCV and Java ZXing on held-out captures of each image (the same captures for every image given). */
async function referees(images: readonly RawImage[], expected: string, square: Square, modules: number, familySeed: number): Promise<Referees[]> {
  const subjects = images.map((image) => captureSubject(image, square));
  const out = images.map(() => ({ zbar: [] as boolean[], opencv: [] as boolean[], ...(zxingJava ? { zxingJava: [] as boolean[], zxingJavaHarder: [] as boolean[] } : {}) }));
  for (const [i, params] of familyParams(familySeed, heldOut, { modules }).entries()) {
    for (const [k, subject] of subjects.entries()) {
      const capture = await captureOf(subject, params, familySeed * 31 + i);
      out[k]!.zbar.push(exactly(await zbarDecode(capture.image), expected));
      out[k]!.opencv.push(exactly(await opencvDecode(capture.image), expected));
      if (zxingJava) {
        const java = await zxingJava.decode(capture.image);
        out[k]!.zxingJava!.push(exactly(java.plain, expected));
        out[k]!.zxingJavaHarder!.push(exactly(java.tryHarder, expected));
      }
    }
  }
  return out;
}

const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
const client = await InferenceClient.start({ manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger, intraOpThreads: threads });
const allJobs = benchJobs(total, mulberry32(seed));
// Each job's first image's index over the whole run: held-out seeds follow it, whichever shard runs the job.
const firstImage = allJobs.map((_, j) => allJobs.slice(0, j).reduce((n, job) => n + job.images, 0));
const mine = allJobs.map((_, j) => j).filter((j) => j % shards === shard);
const list = mine.map((j) => allJobs[j]!);
const mineImages = list.reduce((n, job) => n + job.images, 0);
const rows: Row[] = [];
const controls: Judged[] = [];

/** Whole-image captures (scan-whole-image.ts), seeded apart from every family seed; none at --whole-image 0. */
async function wholeImageOf(image: RawImage, expected: string, square: Square, modules: number, index: number): Promise<WholeImageReads | undefined> {
  if (wholeImage === 0) return undefined;
  return wholeImageReads(image, expected, square.side, modules, wholeImage, 900_001 + 13 * index, zxingJava);
}

/** ImageMagick captures (scan-imagemagick.ts), seeded apart from the other models; none at --imagemagick 0. */
async function imageMagickOf(image: RawImage, expected: string, square: Square, modules: number, index: number): Promise<ImageMagickReads | undefined> {
  if (magick === 0) return undefined;
  return imageMagickReads(image, expected, square.side, modules, magick, 31_337 + 7 * index, zxingJava);
}

if (values.out) await mkdir(values.out, { recursive: true });
if (values.pairs) await mkdir(values.pairs, { recursive: true });
/** What --pairs wrote: each repaired image's two files and what the repair cost it. */
const pairs: RepairPair[] = [];
if (values.cache) await mkdir(values.cache, { recursive: true });
const abort = new AbortController();

interface Prepared {
  readonly job: Job;
  readonly workflow: QrWorkflowName;
  readonly control: JobControlImage;
  readonly generation: Promise<Pick<InferenceResult, 'images'>>;
}

/**
 * Where the cache keeps job `job`'s image k: named by the job's request, the sampling steps and
 * the control image the images were generated on (an image made for another matrix is not this
 * job's).
 */
function cachePath(job: Job, control: RawImage, k: number): string {
  const key = createHash('sha256').update(JSON.stringify({ body: job.body, steps })).update(control.data).digest('hex').slice(0, 16);
  return join(values.cache!, `${key}-${k}.png`);
}

async function cached(job: Job, control: RawImage): Promise<RawImage[] | undefined> {
  if (!values.cache) return undefined;
  try {
    return await Promise.all(Array.from({ length: job.images }, async (_, k) => decodeImage(await readFile(cachePath(job, control, k)), { maxPixels: 1 << 26, channels: 3 })));
  } catch {
    return undefined;
  }
}

async function generate(job: Job, request: Parameters<InferenceClient['run']>[0]): Promise<Pick<InferenceResult, 'images'>> {
  const hit = await cached(job, request.control);
  if (hit) return { images: hit };
  const result = await client.run(request);
  if (values.cache) await Promise.all(result.images.map(async (image, k) => writeFile(cachePath(job, request.control, k), await encodePng(image))));
  return result;
}

function start(job: Job, index: number): Promise<Prepared> {
  const parsed = parseCreateBody(job.body, { allowPrivateUrls: false });
  if (!parsed.ok) throw new Error(`job ${index}: ${JSON.stringify(parsed.issues)}`);
  const { workflow, input, imageCount } = parsed.value;
  const plan = controlPlanFor(workflow, input);
  if (plan.kind !== 'content') throw new Error(`job ${index}: ${workflow} has no content plan`);
  return jobControlImage(plan, { policy: { allowPrivate: false } }, abort.signal).then((control) => {
    const settings = settingsFor(client.manifest, workflow as QrWorkflowName, input, imageCount);
    const generation = generate(job, { ...settings, steps, control: control.image, width: plan.canvas.width, height: plan.canvas.height });
    return { job, workflow: workflow as QrWorkflowName, control, generation };
  });
}

if (list.length === 0) throw new BenchUsageError(`--shard ${shard}/${shards} has no jobs: ${total} images make ${allJobs.length} jobs; use at most ${allJobs.length} shards`);
const t0 = performance.now();
let next = start(list[0]!, 0);
for (let j = 0; j < list.length; j++) {
  const current = await next;
  const result = await current.generation;
  // The next generation runs in the inference thread while this one is evaluated here.
  if (j + 1 < list.length) next = start(list[j + 1]!, j + 1);
  const { control, workflow } = current;
  const { expected, codeSide, geometry } = control;
  if (!geometry) throw new Error('content plans have geometry');
  const square = geometry.layout.placement;
  const modules = square.side / geometry.layout.moduleSize;
  const codeRect = { x: square.x, y: square.y, width: square.side, height: square.side };

  const controlVerdict = await familyVerdict(control.image, expected, square, { codeSide, modules });
  const [controlReferees] = await referees([control.image], expected, square, modules, heldOutSeed(total + mine[j]!));
  const controlWhole = await wholeImageOf(control.image, expected, square, modules, total + mine[j]!);
  const controlMagick = await imageMagickOf(control.image, expected, square, modules, total + mine[j]!);
  controls.push({
    scannable: controlVerdict.scannable,
    robustness: controlVerdict.robustness!.share,
    referees: controlReferees!,
    ...(controlWhole ? { wholeImage: controlWhole } : {}),
    ...(controlMagick ? { imageMagick: controlMagick } : {}),
  });

  for (const [k, image] of result.images.entries()) {
    const index = firstImage[mine[j]!]! + k;
    const g0 = performance.now();
    const guaranteed = await ensureScannable(image, expected, geometry, mode, { codeSide });
    const guaranteeMs = performance.now() - g0;
    const repaired = guaranteed.image !== image;
    // The unrepaired image's full verdict (inside ensureScannable its captures may stop early).
    const v0 = performance.now();
    const before = repaired ? await familyVerdict(image, expected, square, { codeSide, modules }) : undefined;
    const verdictMs = repaired ? performance.now() - v0 : guaranteeMs;
    const [refBefore, refAfter] = await referees(repaired ? [image, guaranteed.image] : [image], expected, square, modules, heldOutSeed(index));
    const whole = guaranteed.scannable ? await wholeImageOf(guaranteed.image, expected, square, modules, index) : undefined;
    const magickReads = guaranteed.scannable ? await imageMagickOf(guaranteed.image, expected, square, modules, index) : undefined;
    rows.push({
      index,
      workflow,
      size: `${image.width}x${image.height}`,
      version: geometry.matrix.version,
      before: { scannable: before ? before.scannable : guaranteed.scannable, robustness: before ? before.robustness!.share : guaranteed.robustness, referees: refBefore! },
      after: {
        scannable: guaranteed.scannable,
        robustness: guaranteed.robustness,
        referees: refAfter ?? refBefore!,
        ...(whole ? { wholeImage: whole } : {}),
        ...(magickReads ? { imageMagick: magickReads } : {}),
      },
      repaired,
      passes: guaranteed.passes,
      changedModules: guaranteed.changedModules,
      guaranteeMs,
      repairMs: guaranteed.repairMs,
      verdictMs,
      ...(repaired
        ? {
            ...(({ whole, inner }) => ({ ssim: whole, ssimCode: inner }))(ssimWhereChanged(image, guaranteed.image, codeRect, codeRect)),
            changed: changedShare(image, guaranteed.image),
            changedCode: changedShare(image, guaranteed.image, codeRect),
          }
        : {}),
    });
    const row = rows[rows.length - 1]!;
    const missed = !guaranteed.scannable || !Object.values(row.after.referees).every((reads: boolean[]) => reads.every(Boolean));
    const name = `${String(index).padStart(3, '0')}-${workflow.replace('generate_qr_art_', '')}-${k}`;
    // --out and --pairs may both want an image: encode each PNG once, on first use.
    const pngs = new Map<RawImage, Promise<Buffer>>();
    const png = (of: RawImage): Promise<Buffer> => {
      if (!pngs.has(of)) pngs.set(of, encodePng(of));
      return pngs.get(of)!;
    };
    if (values.out && missed) {
      await writeFile(join(values.out, `${name}-before.png`), await png(image));
      if (repaired) await writeFile(join(values.out, `${name}-after.png`), await png(guaranteed.image));
    }
    if (values.pairs && repaired) {
      await writeFile(join(values.pairs, `${name}-before.png`), await png(image));
      await writeFile(join(values.pairs, `${name}-after.png`), await png(guaranteed.image));
      pairs.push({ name, workflow, size: row.size, ssim: row.ssim!, ssimCode: row.ssimCode!, changed: row.changed!, passes: guaranteed.passes });
    }
  }
  process.stderr.write(`\r${rows.length}/${mineImages} images`);
}
process.stderr.write('\n');
await client.close();
zxingJava?.close();
const figures: Report = { rows, controls, mode, seed, steps, heldOut, jobs: list.length, wallS: (performance.now() - t0) / 1000, shard: { index: shard, of: shards, images: total } };
if (values.rows) await writeFile(values.rows, JSON.stringify(figures));
if (values.pairs) await writeFile(join(values.pairs, `pairs-${shard}.json`), JSON.stringify(pairs, null, 1));
report(figures);

/**
 * The shards' files fit together: one run's settings (images, seed, mode, steps, held-out
 * captures), and each shard 0..N-1 exactly once; a file given twice, or one missing, would
 * report other figures than the run's without saying so.
 */
function checkShards(files: readonly string[], parts: readonly Report[]): void {
  const settings = (p: Report) => JSON.stringify({ of: p.shard?.of, images: p.shard?.images, seed: p.seed, mode: p.mode, steps: p.steps, heldOut: p.heldOut });
  parts.forEach((p, i) => {
    if (!p.shard) throw new BenchUsageError(`--merge: ${files[i]} does not say which shard it is (written before shards were recorded); run it again`);
    if (settings(p) !== settings(parts[0]!)) throw new BenchUsageError(`--merge: ${files[i]} is from another run than ${files[0]} (${settings(p)} vs ${settings(parts[0]!)})`);
  });
  const of = parts[0]!.shard!.of;
  const seen = parts.map((p) => p.shard!.index).sort((a, b) => a - b);
  const expected = Array.from({ length: of }, (_, i) => i);
  if (JSON.stringify(seen) !== JSON.stringify(expected)) throw new BenchUsageError(`--merge: the files are shards ${seen.join(', ')} of ${of}; give each of 0..${of - 1} once`);
}
