/**
 * `qr-art predict`: a prediction on a qr-art API server, through the package's own client
 * (src/client). The body comes from flags (one per field of every workflow, as `qr-art
 * generate` names them) and/or a JSON file; the server is the judge of the body, and its
 * refusals come back naming the flag the user typed.
 */
import { randomUUID } from 'node:crypto';
import { access, constants, mkdir, readFile } from 'node:fs/promises';
import { writeOutputFile } from './write-output.ts';
import path from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { QrArtApiError, QrArtClient, QrArtConnectionError, type CreateBody, type PredictionRecord } from '../client/index.ts';
import { headerValueProblem, MAX_TIMER_MS } from '../client/http.ts';
import { bodyFieldsNotTaken, bodyFromFlags, flagMessages, flagsNotTaken, forWorkflow, GENERATION_FLAGS, optionName, type BodyFlag } from './body-flags.ts';
import { scanSummary } from './scan-summary.ts';

export const DEFAULT_URL = 'http://localhost:8080';
/** The longest --timeout: what a Node timer can wait, in whole seconds. */
const MAX_TIMEOUT_S = Math.floor(MAX_TIMER_MS / 1000);

const USAGE = `qr-art predict --workflow NAME [body flags] [--body FILE|-] [--wait] [--out DIR] [--json]

Creates a prediction on a qr-art server and prints its id and credits. With --wait, follows it
(progress on stderr), then downloads its images into --out and prints their paths and whether
each scans. The server checks the body (docs/workflows.md has every field, range and price).

  --url URL              the server (default QR_ART_URL, else ${DEFAULT_URL})
  --key KEY              the API key (default QR_ART_API_KEY)
  --workflow NAME        generate_qr_art ... generate_qr_art_v5s, outpainting (or "workflow" in --body)
  --body FILE|-          a JSON create body (- reads stdin); flags given too replace its fields

  --prompt TEXT          prompt (qrText for v1-v4)
  --qr-content TEXT      qrContent: what the code encodes (v4, v5)
  --qr-image URL         qrImage: a QR code image (v1-v3b)
  --negative-prompt TEXT
  --seed N               random when absent (the record's input says which)
  --steps N              steps (qrSteps for v1-v3b and v4s-v4dream; v4 takes none)
  --cfg N  --qr-strength N  --model NAME  --batch-size N  --aspect-ratio R  --resolution R
  --qr-x N  --qr-y N  --qr-ratio N  --pattern NAME  --preset NAME  --enhance face  --qr-repair MODE
  --webhook URL          called on each status change (verify with the client's verifyWebhook)
  --image URL  --image-width N  --image-height N  --padding-left N  --padding-right N
  --padding-top N  --padding-bottom N  --type one_shot|multi_shots          (outpainting)

  --idempotency-key KEY  the create's Idempotency-Key (default a new one each run): the same key
                         and body get the prediction already made instead of a second charge
  --wait                 wait until it is executed or failed, then download the images
  --timeout SECONDS      with --wait, stop waiting after this long (the prediction goes on)
  --out DIR              where --wait writes <id>-<i>.png (default .)
  --json                 print JSON: the record; with --wait {record, files} (and error, when it stops short)

Exit status: 0 created (with --wait: executed), 1 failed (the prediction's error code and message
are printed), the server could not be reached or answered 5xx (the --idempotency-key to repeat
the create with is printed), or --timeout passed, 2 bad flags, 3 the API refused the request (its
message and each field it names are printed).`;

/** Every workflow's fields: a generation's (v5 names; forWorkflow renames them for v1-v4), the webhook, outpainting's. */
const BODY_FLAGS: readonly BodyFlag[] = [
  ...GENERATION_FLAGS,
  { field: 'webhook', flag: '--webhook', kind: 'text' },
  { field: 'image', flag: '--image', kind: 'text' },
  { field: 'image_width', flag: '--image-width', kind: 'number' },
  { field: 'image_height', flag: '--image-height', kind: 'number' },
  { field: 'padding_left', flag: '--padding-left', kind: 'number' },
  { field: 'padding_right', flag: '--padding-right', kind: 'number' },
  { field: 'padding_top', flag: '--padding-top', kind: 'number' },
  { field: 'padding_bottom', flag: '--padding-bottom', kind: 'number' },
  { field: 'type', flag: '--type', kind: 'text' },
];

/** The flags of a workflow, named after its body's fields (a workflow this build does not know keeps the v5 names). */
export const flagsFor = (workflow: string): readonly BodyFlag[] => forWorkflow(BODY_FLAGS, workflow);

export interface PredictEnv {
  readonly QR_ART_URL?: string | undefined;
  readonly QR_ART_API_KEY?: string | undefined;
}

type Values = Record<string, string | boolean | undefined>;

function usageError(lines: string[]): number {
  for (const line of lines) console.error(line);
  return 2;
}

/** `qr-art predict`: returns the exit status. */
export async function predictCommand(argv: string[], env: PredictEnv = {}, stdin: NodeJS.ReadableStream = process.stdin): Promise<number> {
  let values: Values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(BODY_FLAGS.map((f) => [optionName(f), { type: 'string' as const }])),
        url: { type: 'string' },
        key: { type: 'string' },
        workflow: { type: 'string' },
        body: { type: 'string' },
        'idempotency-key': { type: 'string' },
        wait: { type: 'boolean', default: false },
        timeout: { type: 'string' },
        out: { type: 'string', default: '.' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return usageError([(error as Error).message, 'see qr-art predict --help']);
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }

  const base = await readBodyFile(values.body as string | undefined, stdin);
  if (typeof base === 'string') return usageError([base]);
  const workflow = (values.workflow as string | undefined) ?? base.workflow;
  if (typeof workflow !== 'string' || workflow === '') return usageError(['--workflow is required (or a "workflow" field in --body)', 'see qr-art predict --help']);
  const flags = flagsFor(workflow);
  // A flag the workflow does not take would be dropped by the server, and the prediction charged without it.
  const notTaken = [...bodyFieldsNotTaken(base, workflow), ...flagsNotTaken(flags, values, workflow)];
  if (notTaken.length > 0) return usageError([...notTaken, 'see qr-art predict --help']);
  const body = { ...base, ...bodyFromFlags(flags, values), workflow } as unknown as CreateBody;

  // An empty variable counts as unset (`QR_ART_URL= qr-art predict ...`).
  const baseUrl = (values.url as string | undefined) ?? (env.QR_ART_URL || DEFAULT_URL);
  const apiKey = (values.key as string | undefined) ?? (env.QR_ART_API_KEY || undefined);
  if (!apiKey) return usageError(['no API key: set QR_ART_API_KEY or pass --key']);
  const keyProblem = headerValueProblem(apiKey);
  if (keyProblem) return usageError([`the API key (--key or QR_ART_API_KEY) ${keyProblem}`]);
  if (!isHttpUrl(baseUrl)) return usageError([`--url: '${baseUrl}' is not an http(s) URL (e.g. ${DEFAULT_URL})`]);
  const timeoutText = values.timeout as string | undefined;
  const timeoutSeconds = timeoutText === undefined ? undefined : Number(timeoutText);
  if (timeoutSeconds !== undefined && !(/^\d+(\.\d+)?$/.test(timeoutText!) && timeoutSeconds > 0 && timeoutSeconds <= MAX_TIMEOUT_S)) {
    return usageError([`--timeout: '${timeoutText}' is not a number of seconds above 0 and at most ${MAX_TIMEOUT_S} (about 24.8 days)`]);
  }
  if (timeoutSeconds !== undefined && !values.wait) return usageError(['--timeout bounds --wait: give --wait too']);
  // A key of its own: the client may then repeat the create after a lost answer without a
  // second charge, and so may the user, with the key printed when the outcome is unknown.
  const idempotencyKey = (values['idempotency-key'] as string | undefined) ?? randomUUID();
  const idempotencyKeyProblem = headerValueProblem(idempotencyKey);
  if (idempotencyKeyProblem) return usageError([`--idempotency-key ${idempotencyKeyProblem}`]);
  // Where --wait writes, checked before anything is charged.
  if (values.wait) {
    const problem = await outDirProblem(String(values.out));
    if (problem) return usageError([`--out: ${problem}`]);
  }

  const client = new QrArtClient({ baseUrl, apiKey });
  let created: PredictionRecord;
  try {
    created = await client.create(body, { idempotencyKey });
  } catch (error) {
    // No answer, or the server could not serve it: the prediction may have been made and charged.
    const unknown = error instanceof QrArtConnectionError || (error instanceof QrArtApiError && error.status >= 500);
    if (!unknown) {
      if (error instanceof QrArtApiError) return apiRefusal(error, flags);
      throw error;
    }
    console.error(error instanceof QrArtApiError ? `${error.message} (${error.status} ${error.code})` : error.message);
    console.error(`  the prediction may have been made: run the same command with --idempotency-key ${idempotencyKey} to get it without a second charge`);
    return 1;
  }
  try {
    if (!values.wait) {
      if (values.json) console.log(JSON.stringify(created));
      else console.log(`${created.id}  ${workflow}  ${created.credits} credits  ${created.status}`);
      return 0;
    }
    // With --json stdout is the one JSON document at the end; the id goes to stderr now, so a
    // wait cut short (Ctrl-C, a CI limit) does not lose the id of a paid prediction.
    if (!values.json) console.log(`${created.id}  ${workflow}  ${created.credits} credits`);
    else console.error(`created ${created.id}  ${workflow}  ${created.credits} credits`);
    const display = progressDisplay(process.stderr);
    let done: PredictionRecord;
    let last = created;
    try {
      done = await client.wait(created.id, {
        signal: timeoutSeconds === undefined ? undefined : AbortSignal.timeout(timeoutSeconds * 1000),
        onStatus: (record) => ((last = record), display.status(record.status)),
        onProgress: (p) => display.progress(p.step, p.total),
        // The wait rides out an API that is away; say so instead of standing still without a word.
        onApiAway: (error) => display.note(error ? `cannot reach the API (${error.message}); still waiting for ${created.id}` : 'the API answers again'),
      });
    } catch (error) {
      if (!(error instanceof DOMException && error.name === 'TimeoutError')) throw error;
      display.stop();
      const why = `still ${last.status} after ${timeoutSeconds} s (--timeout); it goes on: GET /v1/predictions/${created.id}`;
      if (values.json) console.log(JSON.stringify({ record: last, files: [], error: why }));
      console.error(why);
      return 1;
    } finally {
      display.stop();
    }
    return await finish(client, done, String(values.out), Boolean(values.json));
  } catch (error) {
    if (error instanceof QrArtApiError) return apiRefusal(error, flags);
    if (error instanceof QrArtConnectionError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
}

const isHttpUrl = (text: string): boolean => URL.canParse(text) && ['http:', 'https:'].includes(new URL(text).protocol);

/** Why the images cannot be written into `dir` (made when missing), or null. */
async function outDirProblem(dir: string): Promise<string | null> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
    return null;
  } catch (error) {
    return `cannot write into ${dir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
}

/** The --body object, or a message saying why there is none. */
async function readBodyFile(file: string | undefined, stdin: NodeJS.ReadableStream): Promise<Record<string, unknown> | string> {
  if (file === undefined) return {};
  let text: string;
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
      text = Buffer.concat(chunks).toString('utf8');
    } else text = await readFile(file, 'utf8');
  } catch (error) {
    return `--body: cannot read ${file}: ${(error as Error).message}`;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return `--body: ${file === '-' ? 'stdin' : file} is not JSON: ${(error as Error).message}`;
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return `--body: ${file === '-' ? 'stdin' : file} must hold a JSON object`;
  return json as Record<string, unknown>;
}

/** After --wait: the failure, or the images written to out. */
async function finish(client: QrArtClient, record: PredictionRecord, out: string, json: boolean): Promise<number> {
  if (record.status === 'failed') {
    if (json) console.log(JSON.stringify({ record, files: [] }));
    console.error(`failed: ${record.error?.code ?? 'unknown'}: ${record.error?.message ?? String(record.output)}${record.refunded ? ' (refunded)' : ''}`);
    return 1;
  }
  const urls = typeof record.output === 'object' ? record.output.images : [];
  const robustness = typeof record.output === 'object' ? (record.output.scanRobustness ?? []) : [];
  const files: { path: string; url: string; isScannable: boolean | null; scanRobustness: number | null }[] = [];
  for (const [i, url] of urls.entries()) {
    const file = path.join(out, `${record.id}-${i}${path.extname(new URL(url).pathname) || '.png'}`);
    // The prediction is made and paid for: whatever stops the download or the write, say where its images still are.
    let data: Uint8Array;
    try {
      data = await client.download(url);
    } catch (error) {
      if (!(error instanceof QrArtApiError || error instanceof QrArtConnectionError)) throw error;
      return imagesStayAt(urls, `cannot download ${url}: ${error.message}`, json ? { record, files } : undefined);
    }
    try {
      await writeOutputFile(file, data);
    } catch (error) {
      return imagesStayAt(urls, `cannot write ${file}: ${(error as Error).message}`, json ? { record, files } : undefined);
    }
    files.push({ path: file, url, isScannable: record.isScanables[i] ?? null, scanRobustness: robustness[i] ?? null });
  }
  if (json) console.log(JSON.stringify({ record, files }));
  else {
    // Outpainting carries no code: its images get no verdict, and the caption it wrote when the
    // request had no prompt is what the new border was painted from.
    for (const file of files) console.log(file.isScannable === null ? file.path : `${file.path}  ${scanSummary(file.isScannable, file.scanRobustness)}`);
    if (typeof record.output === 'object' && record.output.caption !== undefined) console.log(`caption: ${record.output.caption}`);
    if (record.isScanables.length > 0) console.log(`isScanables: ${JSON.stringify(record.isScanables)}`);
  }
  return 0;
}

/** Exit 1 after a made prediction's images could not be saved: why, then their URLs (and, with --json, the record on stdout). */
function imagesStayAt(urls: readonly string[], why: string, json?: { record: PredictionRecord; files: unknown[] }): number {
  if (json) console.log(JSON.stringify({ ...json, error: why }));
  console.error(`${why}; the images stay at:`);
  for (const each of urls) console.error(`  ${each}`);
  return 1;
}

/** The API's refusal: its message, then each field it names as the flag that sets it. */
function apiRefusal(error: QrArtApiError, flags: readonly BodyFlag[]): number {
  console.error(`${error.message} (${error.status} ${error.code})`);
  const named = error.details.filter((d) => d.field !== '');
  const lines = flagMessages(
    named.map((d) => ({ field: d.field, rule: d.rule, message: d.message ?? `${d.field}: ${d.rule}` })),
    flags,
  );
  for (const line of lines) console.error(`  ${line}`);
  if (error.code === 'unauthorized') console.error('  the key comes from --key or QR_ART_API_KEY');
  if (error.retryAfter !== null) console.error(`  retry after ${error.retryAfter} s`);
  return 3;
}

interface ProgressDisplay {
  status(status: string): void;
  progress(step: number, total: number): void;
  /** A line of its own (the API away and back), above a bar on a terminal. */
  note(text: string): void;
  stop(): void;
}

/** A bar redrawn in place on a terminal; one plain line per change otherwise (logs, CI, tests). */
function progressDisplay(stream: NodeJS.WriteStream): ProgressDisplay {
  if (!stream.isTTY) {
    return {
      status: (status) => void stream.write(`status: ${status}\n`),
      progress: (step, total) => void stream.write(`step ${step}/${total}\n`),
      note: (text) => void stream.write(`${text}\n`),
      stop: () => undefined,
    };
  }
  const bar = new cliProgress.SingleBar(
    { stream, format: '{status} [{bar}] {value}/{total} steps  {duration}s', hideCursor: true, barsize: 30 },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let status = 'queued';
  const start = (total: number, value: number) => {
    if (started) return;
    started = true;
    bar.start(total, value, { status });
  };
  return {
    status(next) {
      status = next;
      if (started) bar.update({ status });
      else start(1, 0);
    },
    progress(step, total) {
      start(total, step);
      bar.setTotal(total);
      bar.update(step, { status });
    },
    note(text) {
      if (!started) return void stream.write(`${text}\n`);
      // The line above the bar, then the bar again where it stood.
      const [total, value] = [bar.getTotal(), bar.getProgress() * bar.getTotal()];
      bar.stop();
      stream.write(`${text}\n`);
      started = false;
      start(total, Math.round(value));
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}
