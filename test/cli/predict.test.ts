/**
 * `qr-art predict` run as a user runs it (node bin/qr-art.js) against the real stack with a
 * demo-model worker: created, followed and downloaded; failed; refused by the API naming the
 * flags; bad flags; no server. And every field of every workflow has a flag.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { flagsFor, predictCommand } from '../../src/cli/predict.ts';
import { requestSchemas } from '../../src/workflows/schemas.ts';
import { WORKFLOWS } from '../../src/workflows/names.ts';
import type { TestStack } from '../helpers/service.ts';
import { startClientStack } from '../client/stack.ts';
import { killWhenTestEnds } from '../helpers/processes.ts';

const bin = path.resolve(import.meta.dirname, '../../bin/qr-art.js');
const KEY = 'key-cli-predict-0123456789abcdef01234';
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const SMALL = ['--workflow', 'generate_qr_art_v5s', '--qr-content', 'https://example.com/cli', '--steps', '4'];

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function run(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'predict', ...args], {
      env: { ...process.env, QR_ART_URL: '', QR_ART_API_KEY: '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    killWhenTestEnds(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, err }));
    child.stdin.end(options.stdin ?? '');
  });
}

describe('qr-art predict', () => {
  let stack: TestStack;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qr-predict-'));
    stack = await startClientStack({ worker: true, env: { API_KEYS: `cody:${KEY}:100` } });
    env = { QR_ART_URL: stack.baseUrl, QR_ART_API_KEY: KEY };
  });
  afterAll(async () => {
    await stack?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('--wait: prints the id and credits, progress on stderr, then downloads the images and prints their paths and isScanables (exit 0)', async () => {
    const out = path.join(dir, 'wait');
    const result = await run([...SMALL, '--prompt', 'a paper lantern', '--seed', '3', '--batch-size', '2', '--wait', '--out', out], { env });
    expect(result.code, result.err).toBe(0);
    const [created, ...rest] = result.out.trim().split('\n');
    const id = created!.split(/\s+/)[0]!;
    expect(created).toBe(`${id}  generate_qr_art_v5s  2.98 credits`);
    expect((await readdir(out)).sort()).toEqual([`${id}-0.png`, `${id}-1.png`]);
    for (const i of [0, 1]) {
      expect(rest[i]).toMatch(new RegExp(`^${path.join(out, `${id}-${i}.png`)}  scannable: (yes|no) \\(\\d{1,3}% of test photos read(, but not by every decoder family)?\\)$`));
      expect(await sharp(path.join(out, `${id}-${i}.png`)).metadata()).toMatchObject({ format: 'png', width: 768, height: 768 });
    }
    expect(rest[2]).toMatch(/^isScanables: \[(true|false),(true|false)\]$/);
    // stderr is not a terminal here: one line per status and per progress update, ending at the last step.
    // The first status is the record's when the watch starts: queued, or executing when a free
    // worker took the job before the client's stream opened (v5s's one-row default runs quickly).
    expect(result.err).toMatch(/^status: (queued|executing)$/m);
    expect(result.err).toContain('status: executed');
    const steps = [...result.err.matchAll(/^step (\d+)\/(\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.at(-1)![0]).toBe(steps.at(-1)![1]);
  });

  it('--wait on outpainting: prints the image without a scan verdict, and the caption it painted from', async () => {
    const source = await sharp({ create: { width: 96, height: 64, channels: 3, background: '#3a7' } }).png().toBuffer();
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(source));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/green.png`;
      const out = path.join(dir, 'outpaint');
      const flags = ['--image', url, '--image-width', '96', '--image-height', '64', '--padding-left', '32', '--padding-right', '32', '--padding-top', '0', '--padding-bottom', '0', '--type', 'one_shot'];
      const result = await run(['--workflow', 'outpainting', ...flags, '--wait', '--out', out], { env });
      expect(result.code, result.err).toBe(0);
      const [created, ...rest] = result.out.trim().split('\n');
      const id = created!.split(/\s+/)[0]!;
      expect(rest).toEqual([path.join(out, `${id}-0.png`), expect.stringMatching(/^caption: \S.*$/)]);
      expect(await sharp(path.join(out, `${id}-0.png`)).metadata()).toMatchObject({ format: 'png', width: 160, height: 64 });
    } finally {
      server.close();
    }
  });

  it('--body from stdin with flags over it, --url and --key flags, --json: {record, files}', async () => {
    const out = path.join(dir, 'json');
    const body = { workflow: 'generate_qr_art_v5s', prompt: 'from the file', qrContent: 'https://example.com/body', steps: 6, seed: 1 };
    const result = await run(['--body', '-', '--steps', '4', '--url', stack.baseUrl, '--key', KEY, '--wait', '--json', '--out', out], { stdin: JSON.stringify(body) });
    expect(result.code, result.err).toBe(0);
    const { record, files } = JSON.parse(result.out);
    expect(record).toMatchObject({ status: 'executed', input: { prompt: 'from the file', steps: 4, seed: 1 } });
    expect(files).toEqual([{ path: path.join(out, `${record.id}-0.png`), url: record.output.images[0], isScannable: record.isScanables[0], scanRobustness: record.output.scanRobustness[0] }]);
  });

  it('without --wait: prints the queued prediction and exits 0; v1-v4 bodies get --prompt as qrText and --steps as qrSteps', async () => {
    const result = await run(['--workflow', 'generate_qr_art_v4s', '--prompt', 'a harbour', '--qr-content', 'hello', '--steps', '10', '--json'], { env });
    expect(result.code, result.err).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({ status: 'queued', credits: 1, input: { qrText: 'a harbour', qrSteps: 10 } });
  });

  it('a failed prediction exits 1 with its error code and message', async () => {
    const result = await run([...SMALL, '--prompt', 'nsfwdemo', '--wait', '--out', path.join(dir, 'nsfw')], { env });
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^failed: nsfw_content: NSFW content detected\./m);
  });

  it('--wait whose images cannot be downloaded (after the retries of a read) exits 1 and prints where the images are', async () => {
    // In-process, so that fault injection can stand in front of fetch: the files cannot be reached.
    const realFetch = globalThis.fetch;
    const errors: string[] = [];
    const printed = vi.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => void errors.push(parts.join(' ')));
    const logged = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const fileGets: string[] = [];
    vi.stubGlobal('fetch', async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input instanceof Request ? input.url : input);
      if (!new URL(url).pathname.startsWith('/v1/files/')) return realFetch(input, init);
      fileGets.push(url);
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
    });
    try {
      const code = await predictCommand([...SMALL, '--prompt', 'a lighthouse', '--wait', '--out', path.join(dir, 'unreachable')], env);
      expect(code).toBe(1);
    } finally {
      vi.unstubAllGlobals();
      printed.mockRestore();
      logged.mockRestore();
    }
    expect(fileGets).toHaveLength(4); // the first try and 3 retries
    expect(errors.at(-2)).toMatch(new RegExp(`^cannot download ${escapeRegExp(fileGets[0]!)}: cannot reach http://127\\.0\\.0\\.1:\\d+: connect ECONNREFUSED; the images stay at:$`));
    expect(errors.at(-1)).toBe(`  ${fileGets[0]}`);
    // With --json the record is still printed on stdout, with why the files are missing.
    const json = await inProcess([...SMALL, '--prompt', 'a lighthouse', '--wait', '--json', '--out', path.join(dir, 'unreachable')], (url) =>
      new URL(url).pathname.startsWith('/v1/files/') ? Promise.reject(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') })) : undefined,
    );
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out.at(-1)!)).toMatchObject({ record: { status: 'executed' }, files: [], error: expect.stringMatching(/^cannot download /) });
  });

  /** predictCommand in this process with `fake` standing in front of fetch (undefined: the real one); what it printed. */
  async function inProcess(args: string[], fake: (input: string, init: RequestInit | undefined, real: typeof fetch) => Promise<Response> | undefined): Promise<{ code: number; out: string[]; err: string[] }> {
    const realFetch = globalThis.fetch;
    const printed = { out: [] as string[], err: [] as string[] };
    const errors = vi.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => void printed.err.push(parts.join(' ')));
    const logs = vi.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => void printed.out.push(parts.join(' ')));
    vi.stubGlobal('fetch', (input: string | URL | Request, init?: RequestInit) => fake(String(input instanceof Request ? input.url : input), init, realFetch) ?? realFetch(input, init));
    try {
      return { code: await predictCommand(args, env), ...printed };
    } finally {
      vi.unstubAllGlobals();
      errors.mockRestore();
      logs.mockRestore();
    }
  }

  it('a create whose outcome is unknown (503 after every retry) exits 1 naming its --idempotency-key; the same command with it gets the prediction, charged once', async () => {
    const args = [...SMALL, '--prompt', 'an unknown outcome', '--seed', '21'];
    const before = (await stack.call('GET', '/v1/predictions', { key: KEY })).body.data.totalDocs;
    // Each create reaches the API, whose answer is then lost behind a 503 (the server's own create_outcome_unknown).
    const lost = await inProcess(args, (url, init, real) => {
      if (init?.method !== 'POST' || !url.endsWith('/v1/predictions/queue')) return undefined;
      return real(url, init).then(async (response) => {
        await response.body?.cancel();
        const error = { code: 'create_outcome_unknown', message: 'the outcome is not known yet', details: [] };
        return Response.json({ success: false, error }, { status: 503, headers: { 'retry-after': '0' } });
      });
    });
    expect(lost.code).toBe(1);
    const key = /--idempotency-key (\S+) to get it without a second charge$/.exec(lost.err.at(-1) ?? '')?.[1];
    expect(key, lost.err.join('\n')).toBeDefined();
    const again = await run([...args, '--idempotency-key', key!], { env });
    expect(again.code, again.err).toBe(0);
    const after = (await stack.call('GET', '/v1/predictions', { key: KEY })).body;
    expect(after.data.totalDocs).toBe(before + 1);
    expect(again.out.split(/\s+/)[0]).toBe(after.data.docs[0].id);
  });

  it('--timeout ends a --wait that goes on too long with exit 1, the id and, with --json, the record on stdout', async () => {
    // The event stream is held without a word (a stalled proxy): only --timeout ends the wait.
    const held = await inProcess([...SMALL, '--prompt', 'a slow one', '--wait', '--timeout', '0.5', '--json', '--out', path.join(dir, 'timeout')], (url, init) =>
      new URL(url).pathname.endsWith('/events') ? new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason))) : undefined,
    );
    expect(held.code).toBe(1);
    const printed = JSON.parse(held.out.at(-1)!);
    expect(printed.error).toBe(`still queued after 0.5 s (--timeout); it goes on: GET /v1/predictions/${printed.record.id}`);
    expect(printed.files).toEqual([]);
    expect(held.err.at(-1)).toBe(printed.error);
    // Said at once on stderr, before the wait: a wait killed outright still leaves the id.
    expect(held.err[0]).toBe(`created ${printed.record.id}  generate_qr_art_v5s  ${printed.record.credits} credits`);
    expect((await run([...SMALL, '--prompt', 'x', '--timeout', '-1', '--wait'], { env })).code).toBe(2);
    // Past what a timer can wait it would fire at once: refused, not a wait that ends straight away.
    const tooLong = await run([...SMALL, '--prompt', 'x', '--timeout', '2592000', '--wait'], { env });
    expect(tooLong.code).toBe(2);
    expect(tooLong.err).toContain('at most 2147483 (about 24.8 days)');
    expect((await run([...SMALL, '--prompt', 'x', '--timeout', '5'], { env })).err).toContain('--timeout bounds --wait');
  });

  it('a request the API refuses exits 3 with its message and each field named by its flag', async () => {
    const result = await run([...SMALL, '--prompt', 'x', '--qr-ratio', '5', '--pattern', 'zz'], { env });
    expect(result.code).toBe(3);
    expect(result.err).toContain('(400 invalid_request)');
    expect(result.err).toMatch(/--qr-ratio must be at most 1/);
    expect(result.err).toMatch(/--pattern must be one of/);
    expect(result.err).not.toMatch(/qrRatio|qrCodePartern/);

    const stranger = await run([...SMALL, '--prompt', 'x'], { env: { ...env, QR_ART_API_KEY: 'nobody-0123456789abcdef0123456789' } });
    expect(stranger.code).toBe(3);
    expect(stranger.err).toContain('(401 unauthorized)');
    expect(stranger.err).toContain('QR_ART_API_KEY');
  });

  it('bad flags exit 2; an unreachable server exits 1', async () => {
    expect((await run(['--prompt', 'x'], { env })).err).toContain('--workflow is required');
    const unknown = await run([...SMALL, '--bogus', '1'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('--bogus');
    const noKey = await run([...SMALL, '--prompt', 'x'], { env: { QR_ART_URL: stack.baseUrl } });
    expect(noKey.code).toBe(2);
    expect(noKey.err).toContain('QR_ART_API_KEY');
    const twoLineKey = await run([...SMALL, '--prompt', 'x'], { env: { ...env, QR_ART_API_KEY: `${KEY}\n${KEY}` } });
    expect(twoLineKey.code).toBe(2);
    expect(twoLineKey.err).toContain('the API key (--key or QR_ART_API_KEY) holds a line break');
    await writeFile(path.join(dir, 'list.json'), '[1]');
    const notObject = await run(['--body', path.join(dir, 'list.json')], { env });
    expect(notObject.code).toBe(2);
    expect(notObject.err).toContain('must hold a JSON object');

    const down = await run([...SMALL, '--prompt', 'x', '--url', 'http://127.0.0.1:1'], { env });
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/cannot reach http:\/\/127\.0\.0\.1:1/);
  }, 60_000);

  it('refuses, before creating anything, a flag or --body field the workflow does not take, a --url without http(s), an --out it cannot write into (exit 2)', async () => {
    // Each refused before anything is created, so nothing is charged.
    const total = async () => (await stack.call('GET', '/v1/predictions', { key: KEY })).body.data.totalDocs as number;
    const before = await total();
    const notTaken = await run(['--workflow', 'generate_qr_art_v4', '--prompt', 'a harbour', '--qr-content', 'hello', '--steps', '30', '--cfg', '3'], { env });
    expect(notTaken.code).toBe(2);
    expect(notTaken.err).toContain('--steps: generate_qr_art_v4 does not take qrSteps');
    expect(notTaken.err).toContain('--cfg: generate_qr_art_v4 does not take cfg');
    const bodyNotTaken = await run(['--body', '-'], { env, stdin: JSON.stringify({ workflow: 'generate_qr_art_v4', qrText: 'a harbour', qrContent: 'hello', qrSteps: 12 }) });
    expect(bodyNotTaken.code).toBe(2);
    expect(bodyNotTaken.err).toContain('--body: generate_qr_art_v4 does not take qrSteps');
    const noScheme = await run([...SMALL, '--prompt', 'x', '--url', 'localhost:8080'], { env });
    expect(noScheme.code).toBe(2);
    expect(noScheme.err).toContain("--url: 'localhost:8080' is not an http(s) URL");
    await writeFile(path.join(dir, 'a-file'), '');
    const outIsFile = await run([...SMALL, '--prompt', 'x', '--wait', '--out', path.join(dir, 'a-file')], { env });
    expect(outIsFile.code).toBe(2);
    expect(outIsFile.err).toMatch(/^--out: cannot write into .*a-file: EEXIST$/m);
    expect(await total()).toBe(before);
  }, 60_000);

  it.each(WORKFLOWS)('%s: every body field has a flag', (workflow) => {
    const flagged = new Set(flagsFor(workflow).map((f) => f.field));
    const fields = Object.keys(requestSchemas[workflow].shape).filter((field) => field !== 'workflow');
    expect(fields.filter((field) => !flagged.has(field))).toEqual([]);
  });
});
