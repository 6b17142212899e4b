/**
 * `qr-art generate`: one generation on this machine, without NATS, the API or a database.
 * The flags are the fields of a create body, validated by the API's own parseCreateBody; the
 * job then runs through the worker's DiffusionRunner (inference thread, NSFW check, scan check)
 * and the images are written as PNG files.
 */
import { MAX_CUDA_DEVICE_ID, MAX_INFERENCE_THREADS } from '../config.ts';
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { writeOutputFile } from './write-output.ts';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { imageSeed } from '../pipeline/txt2img.ts';
import { EXECUTION_PROVIDER_VALUES, parseExecutionProvider, type ExecutionProviderValue } from '../pipeline/providers.ts';
import { FinishPool } from '../worker/finish-pool.ts';
import { DiffusionRunner } from '../worker/diffusion-runner.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../worker/inference-client.ts';
import { JobInputError } from '../worker/runner.ts';
import { catalogue, ENHANCE_VALUES, isWorkflowName, QR_CODE_PATTERNS, QR_REPAIR_MODES, V5_MODELS } from '../workflows/catalogue.ts';
import { QR_WORKFLOWS } from '../workflows/names.ts';
import { ASPECT_RATIOS, RESOLUTIONS } from '../workflows/sizes.ts';
import { parseCreateBody } from '../workflows/validate.ts';
import { bodyFromFlags, flagMessages, flagsNotTaken, forWorkflow, GENERATION_FLAGS, optionName } from './body-flags.ts';
import { scanSummary } from './scan-summary.ts';

/** The configuration keys generate reads (a subset of Config; all optional). */
export interface GenerateConfig {
  readonly MODELS_MANIFEST?: string | undefined;
  readonly EXECUTION_PROVIDER?: ExecutionProviderValue | undefined;
  readonly CUDA_DEVICE_ID?: number | undefined;
  readonly INFERENCE_THREADS?: number | undefined;
  readonly ALLOW_PRIVATE_URLS?: boolean | undefined;
  readonly IMAGE_FETCH_TIMEOUT_MS?: number | undefined;
  readonly IMAGE_MAX_BYTES?: number | undefined;
  readonly IMAGE_MAX_PIXELS?: number | undefined;
}

const DEFAULT_WORKFLOW = 'generate_qr_art_v5';

const USAGE = `qr-art generate --prompt TEXT --qr-content TEXT [options]

Generates QR art on this machine (no server needed) and writes <out>/<seed>-<i>.png.
Body flags are checked by the API's rules for the workflow.

  --workflow NAME        default ${DEFAULT_WORKFLOW}; any QR workflow (v1-v3b take --qr-image)
  --prompt TEXT          prompt (qrText for v1-v4)
  --qr-content TEXT      qrContent: what the code encodes (v4, v5)
  --qr-image URL         qrImage: a QR code image to use (v1-v3b)
  --negative-prompt TEXT
  --seed N               random when absent (printed)
  --steps N              steps (qrSteps for v1-v3b and v4s-v4dream; v4 takes none)
  --cfg N                guidance (v5)
  --qr-strength N        ControlNet strength
  --model NAME           ${V5_MODELS.join(' ')}
  --batch-size N         images (v4, v5)
  --aspect-ratio R       ${ASPECT_RATIOS.join(' ')}
  --resolution R         ${RESOLUTIONS.join(' ')}
  --qr-x N, --qr-y N     top-left of the code's square in output pixels (centred when absent)
  --qr-ratio N           side of that square / the short side
  --pattern NAME         ${QR_CODE_PATTERNS.join(' ')}
  --preset NAME          style preset (v5)
  --enhance VALUE        ${ENHANCE_VALUES.join(' ')} (v5)
  --qr-repair VALUE      ${QR_REPAIR_MODES.join(' ')} (default: the workflow's; docs/scan-repair.md)

  --out DIR              where the PNG files go (default .)
  --manifest PATH        model manifest (default MODELS_MANIFEST, else the package's models/manifest.json)
  --provider P           cpu, cuda, webgpu, cuda,cpu or webgpu,cpu (default EXECUTION_PROVIDER, else cpu); a device that cannot
                         run every graph is an error unless ',cpu' allows the fallback
  --device-id N          CUDA device (default CUDA_DEVICE_ID, else 0)
  --threads N            CPU threads per ONNX session (default: all cores)
  --json                 print the result as JSON

Exit status: 0 images written, 1 failure, 2 bad flags or input, 3 rejected as NSFW.`;

function fail(lines: string[], code = 2): number {
  for (const line of lines) console.error(line);
  return code;
}

/** `qr-art generate`: returns the exit status. */
export async function generateCommand(argv: string[], config: GenerateConfig = {}): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(GENERATION_FLAGS.map((f) => [optionName(f), { type: 'string' as const }])),
        workflow: { type: 'string', default: DEFAULT_WORKFLOW },
        out: { type: 'string', default: '.' },
        manifest: { type: 'string' },
        provider: { type: 'string' },
        'device-id': { type: 'string' },
        threads: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return fail([(err as Error).message, 'see qr-art generate --help']);
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }

  // Machine options.
  const problems: string[] = [];
  const workflow = String(values.workflow);
  if (isWorkflowName(workflow) && catalogue[workflow].family === 'outpainting') problems.push(`--workflow: ${workflow} is not a QR workflow; generate makes QR art`);
  // Named here: the API's own message would offer outpainting among the choices.
  else if (!isWorkflowName(workflow)) problems.push(`--workflow must be one of ${QR_WORKFLOWS.join(', ')}, got '${workflow}'`);
  const providerName = (values.provider as string | undefined) ?? config.EXECUTION_PROVIDER ?? 'cpu';
  if (!(EXECUTION_PROVIDER_VALUES as readonly string[]).includes(providerName)) problems.push(`--provider must be one of ${EXECUTION_PROVIDER_VALUES.join(', ')}, got '${providerName}'`);
  const intFlag = (name: string, min: number, max: number): number | undefined => {
    const raw = values[name];
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (typeof raw !== 'string' || !/^\d+$/.test(raw.trim()) || n < min || n > max) problems.push(`--${name} must be an integer from ${min} to ${max}, got '${String(raw)}'`);
    return n;
  };
  // The bounds of CUDA_DEVICE_ID and INFERENCE_THREADS (config.ts).
  const deviceId = intFlag('device-id', 0, MAX_CUDA_DEVICE_ID) ?? config.CUDA_DEVICE_ID ?? 0;
  const threads = intFlag('threads', 1, MAX_INFERENCE_THREADS) ?? config.INFERENCE_THREADS;

  // Body flags: those the workflow does not take are refused, not silently dropped.
  const flags = forWorkflow(GENERATION_FLAGS, workflow);
  problems.push(...flagsNotTaken(flags, values, workflow));
  if (problems.length > 0) return fail(problems);
  const allowPrivateUrls = config.ALLOW_PRIVATE_URLS ?? false;
  const parsed = parseCreateBody({ workflow, ...bodyFromFlags(flags, values) }, { allowPrivateUrls });
  if (!parsed.ok) return fail(flagMessages(parsed.issues, [...flags, { field: 'workflow', flag: '--workflow', kind: 'text' }]));

  const executionProvider = parseExecutionProvider(providerName as ExecutionProviderValue, deviceId);
  const manifestPath = (values.manifest as string | undefined) ?? config.MODELS_MANIFEST ?? DEFAULT_MANIFEST_PATH;
  const logger = pino({ level: 'warn', base: undefined }, pino.destination(2));
  const out = String(values.out);
  // Before the models load and the generation runs: a folder it cannot write would cost all of that.
  try {
    await mkdir(out, { recursive: true });
    await access(out, constants.W_OK);
  } catch (error) {
    return fail([`--out: cannot write to ${out} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  let progress: ReturnType<typeof progressBar> | undefined;

  let client: InferenceClient | undefined;
  let finishing: FinishPool | undefined;
  try {
    client = await InferenceClient.start({ manifestPath, executionProvider, logger, warmUp: false, ...(threads !== undefined ? { intraOpThreads: threads } : {}) });
    finishing = new FinishPool();
    const runner = new DiffusionRunner({
      inference: client,
      finishing,
      logger,
      policy: { allowPrivate: allowPrivateUrls },
      fetchLimits: {
        ...(config.IMAGE_FETCH_TIMEOUT_MS !== undefined ? { totalTimeoutMs: config.IMAGE_FETCH_TIMEOUT_MS } : {}),
        ...(config.IMAGE_MAX_BYTES !== undefined ? { maxBytes: config.IMAGE_MAX_BYTES } : {}),
        ...(config.IMAGE_MAX_PIXELS !== undefined ? { maxPixels: config.IMAGE_MAX_PIXELS } : {}),
      },
    });
    const { value } = parsed;
    const job = { id: `cli-${Date.now()}`, userId: 'cli', workflow: value.workflow, input: value.input, imageCount: value.imageCount, createdAt: new Date().toISOString() };
    progress = progressBar(process.stderr);
    const run = await runner.runDetailed(job, { onProgress: progress.update });
    progress.done();
    if (run.outcome.kind === 'nsfw') return fail(['rejected: the NSFW check flagged the output; no files written'], 3);

    const files: { path: string; isScannable: boolean; scanRobustness: number | null }[] = [];
    for (const [i, image] of run.outcome.images.entries()) {
      const file = path.join(out, `${run.seed}-${i}.${image.extension}`);
      await writeOutputFile(file, image.data);
      files.push({ path: file, isScannable: image.isScannable === true, scanRobustness: image.scanRobustness ?? null });
    }
    const timings = Object.fromEntries(Object.entries(run.timings).map(([k, v]) => [k, Math.round(v)]));
    if (values.json) {
      console.log(JSON.stringify({ workflow: value.workflow, seed: run.seed, width: run.width, height: run.height, provider: client.provider.provider, files, isScanables: files.map((f) => f.isScannable), timings }));
    } else {
      files.forEach((f, i) => console.log(`${f.path}  ${run.width}x${run.height}  seed ${imageSeed(run.seed, i)}  ${scanSummary(f.isScannable, f.scanRobustness)}`));
      console.log(`isScanables: ${JSON.stringify(files.map((f) => f.isScannable))}`);
      console.log(`timings (ms, ${client.provider.provider}): ${Object.entries(timings).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    }
    return 0;
  } catch (err) {
    progress?.done();
    if (err instanceof JobInputError) return fail([`${err.code}: ${err.message}`]);
    return fail([`generate failed: ${(err as Error).message}`], 1);
  } finally {
    await finishing?.close();
    await client?.close();
  }
}

/** A bar redrawn in place on a terminal; one plain line per step otherwise (logs, CI). */
function progressBar(stream: NodeJS.WriteStream): { update: (step: number, total: number) => void; done: () => void } {
  const started = performance.now();
  let drawn = false;
  const width = 30;
  return {
    update(step, total) {
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      if (stream.isTTY) {
        const filled = Math.round((step / total) * width);
        stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${step}/${total} ${secs}s`);
        drawn = true;
      } else {
        stream.write(`step ${step}/${total} ${secs}s\n`);
      }
    },
    done() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
