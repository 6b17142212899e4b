/**
 * An fp16 VAE decoder that overflows (NaN/Inf) never becomes a black image: the decode is
 * retried with the manifest's vae_decoder_fp32, or the job fails with NonFiniteOutputError,
 * which the worker reports as a refunded failure. The overflowing decoder is a fixture
 * (scripts/demo-models/overflowing-vae.ts).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManifestJson, writeManifestVariant } from '../../scripts/demo-models/manifest-variants.ts';
import { buildOverflowingVaeDecoder } from '../../scripts/demo-models/overflowing-vae.ts';
import { buildVaeDecoder } from '../../scripts/demo-models/vae.ts';
import { rawImage } from '../../src/image/raw.ts';
import { encodeModel } from '../../src/onnx/proto.ts';
import { vaeDecode, vaeEncode } from '../../src/pipeline/diffusion-parts.ts';
import { setRunObserver } from '../../src/pipeline/graph-session.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { NonFiniteOutputError } from '../../src/pipeline/non-finite.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { warmUp } from '../../src/pipeline/warm-up.ts';
import { InferenceRunError } from '../../src/worker/inference-protocol.ts';
import { asJobError, JobInputError } from '../../src/worker/runner.ts';
import { copyModel, withHalfIo } from '../helpers/onnx-variants.ts';

const quiet = pino({ level: 'silent' });
let dir: string;
let overflowing: string;
const opened: PipelineSessions[] = [];

/** Sessions of the demo manifest changed by `edit` (no optional graphs besides the ones named). */
async function sessionsWith(name: string, edit: (graphs: ManifestJson) => void, roles: ('vae_decoder_fp32' | 'vae_encoder')[] = []): Promise<PipelineSessions> {
  const file = await writeManifestVariant(dir, name, (m) => edit(m.models['demo-sd15'].graphs));
  const s = await createSessions(await loadManifest(file), { executionProvider: { provider: 'cpu' }, logger: quiet, intraOpThreads: 1, roles });
  opened.push(s);
  return s;
}

const request: Txt2ImgRequest = {
  prompt: 'a bright orange sunset',
  seed: 7,
  batchSize: 1,
  steps: 4,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control: rawImage(new Uint8Array(64 * 64).fill(200), 64, 64, 1),
  controlScale: 1,
  controlStart: 0,
  controlEnd: 1,
  width: 64,
  height: 64,
  nativeSize: 64,
  refine: false,
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-nan-vae-'));
  overflowing = join(dir, 'overflowing', 'model.onnx');
  await mkdir(join(dir, 'overflowing'));
  await writeFile(overflowing, buildOverflowingVaeDecoder());
  await mkdir(join(dir, 'half'));
  await writeFile(join(dir, 'half', 'model.onnx'), encodeModel(withHalfIo(copyModel(buildVaeDecoder()))));
});

afterAll(async () => {
  setRunObserver(undefined);
  for (const s of opened) await s.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a VAE decoder that overflows to NaN', () => {
  it('fails the generation with NonFiniteOutputError, naming the fallback, instead of returning a black image', async () => {
    const sessions = await sessionsWith('no-fallback', (g) => (g.vae_decoder.path = overflowing));
    // It loads and warms up (zero latents do not overflow): only a real image shows the fault.
    await warmUp(sessions, [{ width: 64, height: 64 }], quiet);
    const err = await generate(request, sessions.forWorkflow('generate_qr_art_v5', 'universal')).catch((e: Error) => e);
    expect(err).toBeInstanceOf(NonFiniteOutputError);
    expect(String(err)).toMatch(/VAE decoder gave non-finite pixels .* names no graphs\.vae_decoder_fp32/);
  });

  it('is decoded again with vae_decoder_fp32, giving the image the float32 decoder gives', async () => {
    const plain = await sessionsWith('plain', () => undefined);
    const expected = await generate(request, plain.forWorkflow('generate_qr_art_v5', 'universal'));
    const sessions = await sessionsWith('fallback', (g) => {
      g.vae_decoder_fp32 = { path: g.vae_decoder.path };
      g.vae_decoder.path = overflowing;
    }, ['vae_decoder_fp32']);
    await warmUp(sessions, [{ width: 64, height: 64 }], quiet);
    const roles: string[] = [];
    setRunObserver((graph) => roles.push(graph.role));
    const got = await generate(request, sessions.forWorkflow('generate_qr_art_v5', 'universal'));
    setRunObserver(undefined);
    expect(roles.filter((r) => r.startsWith('vae_decoder'))).toEqual(['vae_decoder', 'vae_decoder_fp32']);
    expect(Buffer.from(got.images[0]!.data).equals(Buffer.from(expected.images[0]!.data))).toBe(true);
    // Not black: the orange prompt is there.
    const px = got.images[0]!.data;
    expect(px[0]! + px[1]! + px[2]!).toBeGreaterThan(100);
  });

  it('non-finite latents are blamed on the denoiser, since no decoder can help', async () => {
    const sessions = await sessionsWith('latents', () => undefined);
    const latents = new Float32Array(4 * 8 * 8).fill(0.1);
    latents[17] = Number.NaN;
    await expect(vaeDecode(sessions.models.get('demo-sd15')!, latents, 8, 8)).rejects.toThrow(/the denoiser gave non-finite latents/);
  });

  it('non-finite latents from the VAE encoder are blamed on the encoder, not on the denoiser after it', async () => {
    const sessions = await sessionsWith('encoder', () => undefined, ['vae_encoder']);
    // A NaN pixel comes out of the encoder as NaN latents, as an overflowing fp16 encoder's would.
    const planes = new Float32Array(3 * 64 * 64).fill(0.25);
    planes[5] = Number.NaN;
    const err = await vaeEncode(sessions.models.get('demo-sd15')!, planes, 64, 64).catch((e: Error) => e);
    expect(err).toBeInstanceOf(NonFiniteOutputError);
    expect(String(err)).toMatch(/the VAE encoder gave non-finite latents/);
    // Ordinary pixels encode.
    planes[5] = 0.25;
    expect(await vaeEncode(sessions.models.get('demo-sd15')!, planes, 64, 64)).toHaveLength(4 * 8 * 8);
  });

  it('a vae_decoder_fp32 that is not float32 is refused at start', async () => {
    await expect(sessionsWith('half-fallback', (g) => (g.vae_decoder_fp32 = { path: join(dir, 'half', 'model.onnx') }), ['vae_decoder_fp32'])).rejects.toThrow(
      /half\/model\.onnx: input 'latent_sample' is float16, the vae_decoder_fp32 role needs float32/,
    );
  });

  it('the worker fails such a job as a refunded failure, not a retry', () => {
    const mapped = asJobError(new InferenceRunError('NonFiniteOutputError', "model 'demo-sd15': the VAE decoder gave non-finite pixels"));
    expect(mapped).toBeInstanceOf(JobInputError);
    expect((mapped as JobInputError).code).toBe('invalid_model_output');
    expect((mapped as JobInputError).message).toMatch(/unusable image .* non-finite pixels/);
  });
});
