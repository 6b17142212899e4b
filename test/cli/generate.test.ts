/**
 * `qr-art generate` in-process on the demo models: files named <seed>-<i>.png at the requested
 * size, isScanables and timings printed, progress on stderr, and flags refused with exit 2 and
 * the flag's name (checked by the API's own validator).
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCommand } from '../../src/cli/generate.ts';
import { captureOutput } from '../helpers/console.ts';
import { runCliToExit } from '../helpers/processes.ts';

describe('qr-art generate', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qr-generate-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const run = (args: string[]) => captureOutput(() => generateCommand(args));

  it('writes <seed>-<i>.png at the output size and prints isScanables, timings and progress', async () => {
    const out = path.join(dir, 'batch');
    const result = await run(['--prompt', 'a blue koi pond', '--qr-content', 'https://example.com', '--steps', '10', '--seed', '42', '--batch-size', '2', '--out', out, '--threads', '1']);
    expect(result.code, result.err).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['42-0.png', '42-1.png']);
    for (const file of ['42-0.png', '42-1.png']) expect(await sharp(path.join(out, file)).metadata()).toMatchObject({ format: 'png', width: 768, height: 768 });
    expect(result.out).toMatch(new RegExp(`${path.join(out, '42-1.png')}  768x768  seed 43  scannable: yes \\(\\d{1,3}% of test photos read\\)\n`));
    expect(result.out).toMatch(/isScanables: \[true,true\]/);
    expect(result.out).toMatch(/timings \(ms, cpu\): qr_render \d+, .*denoiser \d+, .*scan \d+, png \d+, total \d+/);
    // Not a terminal here: one plain progress line per step.
    expect(result.err).toContain('step 1/10');
    expect(result.err).toContain('step 10/10');
  });

  it('runs from any working directory: its threads find their loader from the package, not the cwd', async () => {
    // A user runs the command from their own folder; the TypeScript sources' threads once looked
    // for tsx there and the process aborted.
    const result = await runCliToExit(['generate', '--prompt', 'koi', '--qr-content', 'hi', '--steps', '10', '--seed', '7', '--out', 'here', '--threads', '1'], {
      cwd: dir,
      env: { ...process.env, QR_ART_FROM_SOURCE: '1' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(await readdir(path.join(dir, 'here'))).toEqual(['7-0.png']);
  }, 60_000);

  it('--json, v5s at 9:16', async () => {
    const out = path.join(dir, 'json');
    const result = await run(['--workflow', 'generate_qr_art_v5s', '--prompt', 'a red lantern', '--qr-content', 'hello', '--steps', '4', '--seed', '5', '--aspect-ratio', '9:16', '--out', out, '--threads', '1', '--json']);
    expect(result.code, result.err).toBe(0);
    const summary = JSON.parse(result.out);
    expect(summary).toMatchObject({ workflow: 'generate_qr_art_v5s', seed: 5, width: 576, height: 1024, provider: 'cpu', files: [{ path: path.join(out, '5-0.png') }] });
    expect(summary.isScanables).toEqual([summary.files[0].isScannable]);
    expect(summary.files[0].scanRobustness).toBeGreaterThanOrEqual(0);
    expect(summary.files[0].scanRobustness).toBeLessThanOrEqual(1);
    expect(summary.timings.total).toBeGreaterThan(0);
    expect(await sharp(path.join(out, '5-0.png')).metadata()).toMatchObject({ width: 576, height: 1024 });
  });

  it('refuses bad flags with exit 2, naming each flag, and writes nothing', async () => {
    const out = path.join(dir, 'bad');
    const bad = await run(['--prompt', 'x', '--qr-content', 'y', '--steps', '3', '--cfg', '50', '--pattern', 'zz', '--qr-ratio', 'wide', '--out', out]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--steps must be at least 10/);
    expect(bad.err).toMatch(/--cfg must be at most 20/);
    expect(bad.err).toMatch(/--pattern must be one of: s1/);
    expect(bad.err).toContain('--qr-ratio');
    expect(bad.err).not.toMatch(/qrRatio|qrCodePartern/);

    const missing = await run(['--qr-content', 'y', '--out', out]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('--prompt is required');

    const unknown = await run(['--prompt', 'x', '--qr-content', 'y', '--bogus', '1']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('--bogus');

    const machine = await run(['--prompt', 'x', '--qr-content', 'y', '--provider', 'tpu', '--device-id=x', '--threads', '99999', '--workflow', 'generate_qr_art_v4', '--cfg', '3']);
    expect(machine.code).toBe(2);
    expect(machine.err).toContain('--provider must be one of cpu, cuda, cuda,cpu, webgpu, webgpu,cpu');
    expect(machine.err).toContain("--device-id must be an integer from 0 to 63, got 'x'");
    // ONNX Runtime's pool would grow without bound (and its refusal of 1e12 names a model file).
    expect(machine.err).toContain("--threads must be an integer from 1 to 256, got '99999'");
    expect(machine.err).toContain('--cfg: generate_qr_art_v4 does not take cfg');

    const workflow = await run(['--workflow', 'outpainting', '--prompt', 'x']);
    expect(workflow.code).toBe(2);
    expect(workflow.err).toContain('--workflow');
    // An unknown one is offered the QR workflows only: generate makes no outpainting.
    const unknownWorkflow = await run(['--workflow', 'nope', '--prompt', 'x', '--qr-content', 'y']);
    expect(unknownWorkflow.code).toBe(2);
    expect(unknownWorkflow.err).toMatch(/--workflow must be one of generate_qr_art, .*generate_qr_art_v5s, got 'nope'/);
    expect(unknownWorkflow.err).not.toContain('outpainting');
    await expect(readdir(out)).rejects.toThrow();
  });

  it('an --out it cannot write is refused (exit 2) before the models load and the generation runs', async () => {
    const file = path.join(dir, 'a-file');
    await writeFile(file, 'not a folder');
    // A manifest that does not exist: reaching the models would be exit 1 naming it.
    const result = await run(['--prompt', 'x', '--qr-content', 'y', '--manifest', path.join(dir, 'nope.json'), '--out', path.join(file, 'images')]);
    expect(result.code).toBe(2);
    expect(result.err.trim()).toBe(`--out: cannot write to ${path.join(file, 'images')} (ENOTDIR)`);
  });

  it('a missing manifest is a failure (exit 1) that names the file', async () => {
    const result = await run(['--prompt', 'x', '--qr-content', 'y', '--manifest', path.join(dir, 'nope.json'), '--out', dir]);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/nope\.json: cannot read the model manifest/);
  });
});
