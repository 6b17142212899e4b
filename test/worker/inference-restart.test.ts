/**
 * Requests waiting in an inference thread that crashes. One the caller gave up is not run on the
 * fresh thread (its abort lived in the dead one). And a thread restarted after a crash, with a job
 * waiting for it, that never becomes
 * ready again (a device that hangs in session creation or warm-up; here the manifest it reads is
 * a FIFO nobody writes: fault injection): the client fails within restartTimeoutMs, rejecting the
 * waiting job and reporting fatal, so the worker hands its jobs back instead of holding them.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { copyFile, mkdtemp, rm, symlink, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import { InferenceCrashError, type InferencePlan } from '../../src/worker/inference-protocol.ts';

const canvas = { width: 128, height: 128 };
const control = renderControlImage({ content: 'restart', pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray', errorCorrectionLevel: 'H' }).image;
const plan = (seed: number): InferencePlan => ({
  workflow: 'generate_qr_art_v5',
  v5Model: 'universal',
  prompt: 'a harbour',
  seed,
  batchSize: 1,
  steps: 6,
  guidance: 7,
  scheduler: 'dpmpp_2m_karras',
  control,
  controlScale: 1.3,
  controlStart: 0,
  controlEnd: 1,
  ...canvas,
});

describe('a request aborted while it waited in a thread that then crashed', () => {
  let client: InferenceClient | undefined;
  afterAll(async () => client?.close());

  it('is not run on the fresh thread: only the next request is', async () => {
    const lines: { seq?: number; msg?: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    client = await InferenceClient.start({ manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger, intraOpThreads: 1, warmUp: false });
    const controller = new AbortController();
    const crashed = client.run(plan(1), {
      onProgress: (step) => {
        // By now the second request waits in the thread; the caller gives it up, and the thread dies
        // at its next step boundary, before it gets to that request.
        if (step !== 2) return;
        controller.abort(new Error('handed back'));
        client!.crashForDrill();
      },
    });
    const abandoned = client.run(plan(2), { signal: controller.signal });
    await expect(abandoned).rejects.toThrow('handed back');
    await expect(crashed).rejects.toThrow(InferenceCrashError);
    await client.run(plan(3));
    const sent = lines.filter((line) => line.msg === 'request sent to the inference thread').map((line) => line.seq);
    // The first two to the first thread; only the third to the fresh one.
    expect(sent).toHaveLength(3);
    expect(new Set(sent).size).toBe(3);
  }, 60_000);
});

describe('a restarted inference thread that never gets ready', () => {
  let dir: string | undefined;
  let client: InferenceClient | undefined;
  afterAll(async () => {
    if (dir) {
      // Let the read still blocked on the FIFO end (it holds a libuv worker until a writer comes).
      try {
        closeSync(openSync(path.join(dir, 'manifest.json'), constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        /* no reader left */
      }
    }
    await client?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails within restartTimeoutMs: the job waiting for it is rejected and the worker is told to give the device up', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-restart-'));
    const manifest = path.join(dir, 'manifest.json');
    await copyFile(DEFAULT_MANIFEST_PATH, manifest);
    await symlink(path.join(path.dirname(DEFAULT_MANIFEST_PATH), 'demo'), path.join(dir, 'demo'));
    const fatal: Error[] = [];
    client = await InferenceClient.start({
      manifestPath: manifest,
      executionProvider: { provider: 'cpu' },
      logger: pino({ level: 'silent' }),
      intraOpThreads: 1,
      warmUp: false,
      restartTimeoutMs: 2000,
      onFatal: (error) => fatal.push(error),
    });
    // The next start reads a manifest that never comes.
    await unlink(manifest);
    execFileSync('mkfifo', [manifest]);

    const crashed = client.run(plan(1), { onProgress: (step) => step === 2 && client!.crashForDrill() });
    const waiting = client.run(plan(2));
    await expect(crashed).rejects.toThrow(/inference thread died during a generation/);
    const error = await waiting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InferenceCrashError);
    expect((error as Error).message).toBe('the inference thread was not ready again within 2000 ms of its restart (a device that hangs in session creation or warm-up?)');
    expect(fatal.map((e) => e.message)).toEqual([(error as Error).message]);
    expect(client.state).toBe('failed');
  }, 60_000);
});
