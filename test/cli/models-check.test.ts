/**
 * `qr-art models check` through the real CLI entry (bin/qr-art.js): on the shipped demo manifest
 * every graph loads, runs a step and names its export-matrix row; on a manifest the worker refuses
 * (optimum's UNet, which has no ControlNet inputs) it prints the start-up error with the fix and
 * exits 1. Every models subcommand answers -h with its usage.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FIXTURES } from '../../scripts/demo-models/exports/index.ts';
import { checkManifest } from '../../src/cli/models-check.ts';
import { installFaults, parseFaultSpec } from '../../src/pipeline/fault-injection.ts';
import { setRunHook } from '../../src/pipeline/graph-session.ts';
import { parseExecutionProvider } from '../../src/pipeline/providers.ts';
import { writeManifestVariant } from '../../scripts/demo-models/manifest-variants.ts';
import { runCliToExit } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/qr-art.js', import.meta.url));
const MANIFEST = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return models('check', ...args);
}

async function models(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return modelsWith({}, ...args);
}

async function modelsWith(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, 'models', ...args], { env: { ...process.env, NODE_NO_WARNINGS: '1', ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('qr-art models check', () => {
  it('on the demo manifest: every graph is matched to its matrix row, runs a step, and the command exits 0', async () => {
    const { code, stdout } = await cli('--manifest', MANIFEST);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^demo-sd15\s+denoiser\s+\S+denoiser\/model\.onnx\s+qr-art-fused-denoiser\s+qr-art\s.*serves\s+\d+\.\d$/m);
    expect(stdout).toMatch(/^demo-sd15\s+text_encoder\s.*qr-art-demo-text-encoder\s.*serves\s+\d+\.\d$/m);
    expect(stdout).toContain('ok: every graph loads and runs a step');
  }, 60_000);

  it('on a manifest with optimum\'s UNet: prints the matched row and the start-up error naming the export to use, exits 1', async () => {
    const row = FIXTURES.find((r) => r.contract.id === 'optimum-fp32-unet')!;
    const manifest = await row.build(await mkdtemp(join(tmpdir(), 'qrart-check-')));
    const { code, stderr } = await cli('--manifest', manifest);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^demo-sd15\s+unet\s.*optimum-fp32-unet\s+optimum\s.*refuses/m);
    expect(stderr).toContain('refused: the worker would not start on this manifest');
    expect(stderr).toContain("down_block_0_additional_residual");
    expect(stderr).toContain('docs/models.md §2.2');
  }, 60_000);

  it('a graph that loads but fails its step is refused, saying which model, not thrown', async () => {
    // The VAE decoder's first run fails as a device out of memory would (fault injection, in this process).
    installFaults(parseFaultSpec('oom:vae_decoder:1'));
    try {
      const result = await checkManifest(MANIFEST, parseExecutionProvider('cpu'), 1);
      expect(result.error).toMatch(/^model 'demo-sd15': a step failed: the vae_decoder graph \(\S+\): .*Failed to allocate memory/);
      expect(result.rows.length).toBeGreaterThan(0);
    } finally {
      setRunHook(undefined);
    }
  }, 60_000);

  it.skipIf(process.getuid?.() !== 0)('a graph file the worker\'s user cannot read is named with its role, not a bare EACCES', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qrart-unreadable-'));
    await chmod(dir, 0o755);
    await mkdir(join(dir, 'vae_decoder'));
    await copyFile(join(dirname(MANIFEST), 'demo/vae_decoder/model.onnx'), join(dir, 'vae_decoder/model.onnx'));
    // Copied in as root with mode 600: the worker runs as another user.
    await chmod(join(dir, 'vae_decoder/model.onnx'), 0o600);
    const manifest = await writeManifestVariant(dir, 'unreadable', (m) => (m.models['demo-sd15'].graphs.vae_decoder.path = join(dir, 'vae_decoder/model.onnx')));
    await chmod(manifest, 0o644);
    const nobody = { uid: Number(execFileSync('id', ['-u', 'nobody']).toString()), gid: Number(execFileSync('id', ['-g', 'nobody']).toString()) };
    const run = await runCliToExit(['models', 'check', '--manifest', manifest], { env: { ...process.env, NODE_NO_WARNINGS: '1' }, cwd: tmpdir(), user: nobody });
    expect(run.code, run.output).toBe(1);
    expect(run.stderr).toMatch(/vae_decoder\/model\.onnx: cannot be read \(EACCES; graphs\.vae_decoder\.path in \S*unreadable\.json\): give the worker's user read access to it/);
  }, 60_000);

  it('asks for --manifest, a known provider and a whole --device-id (exit 2)', async () => {
    expect((await cli()).code).toBe(2);
    expect((await cli('--manifest', MANIFEST, '--provider', 'tpu')).code).toBe(2);
    const device = await cli('--manifest', MANIFEST, '--provider', 'cuda', '--device-id', 'first');
    expect(device.code).toBe(2);
    expect(device.stderr).toContain("--device-id must be a whole number from 0 to 63, got 'first'");
  });

  it('checks on the device a worker in the same environment uses: EXECUTION_PROVIDER when --provider is not given, its ,cpu forms too', async () => {
    // Whether this machine has CUDA or not, the check without --provider is the check with --provider cuda.
    const [byEnvironment, byFlag] = await Promise.all([
      modelsWith({ EXECUTION_PROVIDER: 'cuda' }, 'check', '--manifest', MANIFEST),
      modelsWith({ EXECUTION_PROVIDER: 'cpu' }, 'check', '--manifest', MANIFEST, '--provider', 'cuda'),
    ]);
    expect(byEnvironment.code).toBe(byFlag.code);
    expect(byEnvironment.stderr.split('\n').at(-2)).toBe(byFlag.stderr.split('\n').at(-2));
    // With the CPU fallback the worker would start, on CUDA or not.
    expect((await cli('--manifest', MANIFEST, '--provider', 'cuda,cpu')).code).toBe(0);
  }, 120_000);
});

describe('qr-art models -h', () => {
  it.each([['check'], ['fuse'], ['scale-controlnet'], ['vae-mean'], []])('models %s -h prints its usage and exits 0', async (...sub) => {
    const { code, stdout, stderr } = await models(...(sub as string[]), '-h');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^qr-art models /m);
  });
});
