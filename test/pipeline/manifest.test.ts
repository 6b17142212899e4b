/**
 * The model manifest and session creation: the shipped demo manifest is complete and loads;
 * every way a manifest or an export can be wrong fails at start naming the file and the problem.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../scripts/demo-models/graph.ts';
import { CONTROL_RESIDUALS } from '../../src/onnx/control-residuals.ts';
import { decodeModel, encodeModel, tensorTypeOf, valueInfo } from '../../src/onnx/proto.ts';
import { loadManifest, parseManifest, resolveOutpainting, resolveWorkflow, type Manifest } from '../../src/pipeline/manifest.ts';
import { GraphSession } from '../../src/pipeline/graph-session.ts';
import { createSessions, ProviderUnavailableError, type SessionOptions } from '../../src/pipeline/sessions.ts';
import { parseExecutionProvider } from '../../src/pipeline/providers.ts';
import { warmUp } from '../../src/pipeline/warm-up.ts';
import { useSeparatePair, writeManifestVariant, type ManifestJson } from '../../scripts/demo-models/manifest-variants.ts';
import { V5_MODELS } from '../../src/workflows/catalogue.ts';
import { QR_WORKFLOWS } from '../../src/workflows/names.ts';

const MODELS_DIR = fileURLToPath(new URL('../../models', import.meta.url));
const MANIFEST = join(MODELS_DIR, 'manifest.json');
const quiet = pino({ level: 'silent' });
const cpu: SessionOptions = { executionProvider: { provider: 'cpu' }, logger: quiet, intraOpThreads: 1 };

let dir: string;
let shipped: Record<string, unknown>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-manifest-'));
  shipped = JSON.parse(await readFile(MANIFEST, 'utf8')) as Record<string, unknown>;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The shipped manifest with absolute graph paths, edited by `edit`, written to the temp folder. */
const variant = (name: string, edit: (m: ManifestJson) => void): Promise<string> => writeManifestVariant(dir, name, edit);
/** The demo model as its separate ControlNet + UNet pair, then changed by `edit`. */
const pairVariant = (name: string, edit: (m: ManifestJson) => void = () => undefined): Promise<string> =>
  variant(name, (m) => {
    useSeparatePair(m);
    edit(m);
  });

describe('the shipped demo manifest', () => {
  let manifest: Manifest;
  beforeAll(async () => {
    manifest = await loadManifest(MANIFEST);
  });

  it('maps every QR workflow and every v5 model value to the demo model', () => {
    for (const w of QR_WORKFLOWS) {
      const models = w === 'generate_qr_art_v5' || w === 'generate_qr_art_v5s' ? V5_MODELS : [undefined];
      for (const m of models) {
        const r = resolveWorkflow(manifest, w, m);
        expect(r.modelId, `${w} ${m}`).toBe('demo-sd15');
        expect(r.settings.steps).toBeGreaterThan(0);
        expect(r.settings.controlStart).toBeLessThan(r.settings.controlEnd);
      }
    }
  });

  it('puts the fast tiers on LCM with few steps and low guidance', () => {
    for (const [w, m] of [['generate_qr_art_v4s', undefined], ['generate_qr_art_v5s', 'real']] as const) {
      const r = resolveWorkflow(manifest, w, m);
      expect(r.scheduler).toBe('lcm');
      expect(r.settings.steps).toBeLessThanOrEqual(8);
      expect(r.settings.guidance).toBeLessThanOrEqual(2);
    }
    expect(resolveWorkflow(manifest, 'generate_qr_art_v5', 'niji').scheduler).toBe('dpmpp_2m_karras');
  });

  it('gives outpainting its model, fewer one_shot steps than multi_shots per pass, and pass/seam defaults', () => {
    const r = resolveOutpainting(manifest);
    expect(r.modelId).toBe('demo-sd15');
    expect(r.scheduler).toBe('dpmpp_2m_karras');
    expect(r.settings.steps).toBeLessThan(r.settings.multiShots.steps);
    expect(r.settings.multiShots.passFraction).toBeGreaterThan(0);
    expect(r.settings.multiShots.maxPasses).toBeGreaterThanOrEqual(2);
    expect(r.settings.featherPixels).toBeGreaterThan(0);
    // Absent optional settings fall back to the code's defaults.
    const bare = parseManifest({ ...structuredClone(shipped), workflows: { ...(shipped.workflows as object), outpainting: { model: 'demo-sd15', steps: 12, guidance: 5 } } }, MANIFEST);
    expect(resolveOutpainting(bare).settings).toMatchObject({ steps: 12, multiShots: { steps: 30, passFraction: 0.25, maxPasses: 6 }, featherPixels: 16, overlapPixels: 32 });
    expect(resolveOutpainting(bare).settings.maxPixels).toBeUndefined();
  });

  it('resolves graph paths against its own folder and applies defaults', () => {
    const model = manifest.models['demo-sd15']!;
    expect(resolve(manifest.dir, model.graphs.denoiser!.path)).toBe(join(MODELS_DIR, 'demo/denoiser/model.onnx'));
    expect(model.latentScale).toBe(0.18215);
    expect(model.nativeSize).toBe(768);
  });

  it('loads every graph, validates it against its role and warms up at the native size', async () => {
    const sessions = await createSessions(manifest, cpu);
    try {
      const m = sessions.models.get('demo-sd15')!;
      expect(Object.keys(m.graphs).sort()).toEqual(
        ['captioner_decoder', 'captioner_encoder', 'denoiser', 'face_detector', 'safety_checker', 'text_encoder', 'unet_inpaint', 'vae_decoder', 'vae_encoder'].sort(),
      );
      expect(sessions.provider).toEqual({ provider: 'cpu' });
      // The fused graph folds guidance in: B latents in, uint8 control image, [1] timestep.
      const denoiser = m.graphs.denoiser!;
      expect(m.denoiser.kind).toBe('fused');
      expect(denoiser.hasInput('guidance_scale')).toBe(true);
      expect(denoiser.input('controlnet_cond')).toMatchObject({ type: 'uint8', shape: [1, 3, 'image_height', 'image_width'] });
      const ts = denoiser.timestepTensor(981.5, 4);
      expect([ts.type, ts.dims]).toEqual(['float32', [1]]);
      const target = sessions.forWorkflow('generate_qr_art_v5', 'dream');
      expect(target.denoiser).toBe(m.denoiser);
      await warmUp(sessions, 'native', quiet);
      // The captioner's tokenizer and generation config are read from beside its decoder.
      expect(m.captioner?.startId).toBe(1);
      expect(sessions.forOutpainting().model).toBe(m);
    } finally {
      await sessions.release();
    }
  });
});

describe('manifest errors name the file and the problem', () => {
  it('a missing manifest', async () => {
    await expect(loadManifest(join(dir, 'nope.json'))).rejects.toThrow(/nope\.json: cannot read the model manifest \(ENOENT\)/);
  });

  it('bad JSON', async () => {
    const file = join(dir, 'bad.json');
    await writeFile(file, '{ "version": 1, ');
    await expect(loadManifest(file)).rejects.toThrow(/bad\.json: not valid JSON/);
  });

  it('schema problems, with their place in the file', async () => {
    const missing = await variant('missing-workflow', (m) => delete m.workflows.generate_qr_art_v4);
    await expect(loadManifest(missing)).rejects.toThrow(/missing-workflow\.json: invalid model manifest: workflows\.generate_qr_art_v4: /);
    const noV5 = await variant('missing-v5-model', (m) => delete m.workflows.generate_qr_art_v5.real);
    await expect(loadManifest(noV5)).rejects.toThrow(/workflows\.generate_qr_art_v5\.real/);
    const typo = await variant('typo', (m) => (m.models['demo-sd15'].graphs.unett = m.models['demo-sd15'].graphs.denoiser));
    await expect(loadManifest(typo)).rejects.toThrow(/typo\.json: .*models\.demo-sd15\.graphs.*unett/);
    const window = await variant('window', (m) => (m.workflows.generate_qr_art.controlStart = 1));
    await expect(loadManifest(window)).rejects.toThrow(/workflows\.generate_qr_art\.controlStart: controlStart must be below controlEnd/);
    const sched = await variant('sched', (m) => (m.workflows.generate_qr_art.scheduler = 'k_lms'));
    await expect(loadManifest(sched)).rejects.toThrow(/workflows\.generate_qr_art\.scheduler/);
    const passes = await variant('passes', (m) => (m.workflows.outpainting.multiShots.maxPasses = 1));
    await expect(loadManifest(passes)).rejects.toThrow(/workflows\.outpainting\.multiShots\.maxPasses/);
    const typoOut = await variant('typo-out', (m) => (m.workflows.outpainting.feather = 3));
    await expect(loadManifest(typoOut)).rejects.toThrow(/workflows\.outpainting.*feather/);
  });

  it('references to models and ControlNets that do not exist', async () => {
    const file = await variant('refs', (m) => {
      m.workflows.generate_qr_art_v4.model = 'sd15-real';
      m.workflows.generate_qr_art_v5.niji.controlnet = 'monster-v2';
    });
    const err = await loadManifest(file).catch((e: Error) => e);
    expect(String(err)).toMatch(/refs\.json: invalid model manifest: /);
    expect(String(err)).toMatch(/workflows\.generate_qr_art_v4\.model: 'sd15-real' is not one of the models \(demo-sd15\)/);
    expect(String(err)).toMatch(/workflows\.generate_qr_art_v5\.niji\.controlnet: 'monster-v2' is not one of the controlnets/);
  });

  it('a model without a safety checker, unless the manifest says explicitly that its images go unchecked', async () => {
    const lacking = await variant('no-checker', (m) => delete m.models['demo-sd15'].graphs.safety_checker);
    await expect(loadManifest(lacking)).rejects.toThrow(
      /no-checker\.json: invalid model manifest: models\.demo-sd15\.graphs\.safety_checker: missing, so this model's images would not be checked for NSFW content; add the graph, or set models\.demo-sd15\.nsfw to \{ "checker": "none" \}/,
    );
    const unchecked = await variant('unchecked', (m) => {
      delete m.models['demo-sd15'].graphs.safety_checker;
      m.models['demo-sd15'].nsfw = { checker: 'none', comment: 'internal previews only' };
    });
    expect((await loadManifest(unchecked)).models['demo-sd15']!.nsfw.checker).toBe('none');
    const both = await variant('both', (m) => (m.models['demo-sd15'].nsfw = { checker: 'none' }));
    await expect(loadManifest(both)).rejects.toThrow(/models\.demo-sd15\.nsfw\.checker: 'none', but graphs\.safety_checker is listed/);
    const typo = await variant('nsfw-typo', (m) => (m.models['demo-sd15'].nsfw = { checker: 'off' }));
    await expect(loadManifest(typo)).rejects.toThrow(/models\.demo-sd15\.nsfw\.checker/);
  });

  it('a captioner with one of its two graphs', async () => {
    const half = await variant('captioner-half', (m) => delete m.models['demo-sd15'].graphs.captioner_encoder);
    await expect(loadManifest(half)).rejects.toThrow(/models\.demo-sd15\.graphs\.captioner_encoder: missing, but graphs\.captioner_decoder is listed; the captioner needs both/);
  });

  it('a graph file that does not exist, and a folder named instead of the file', async () => {
    const file = await variant('missing-graph', (m) => (m.models['demo-sd15'].graphs.denoiser.path = join(dir, 'weights/denoiser/model.onnx')));
    await expect(createSessions(await loadManifest(file), cpu)).rejects.toThrow(/weights\/denoiser\/model\.onnx: file not found \(named in .*missing-graph\.json\)/);
    // The exporter's folder instead of the file in it.
    const folder = await variant('folder-graph', (m) => (m.models['demo-sd15'].graphs.vae_decoder.path = resolve(MODELS_DIR, 'demo/vae_decoder')));
    await expect(createSessions(await loadManifest(folder), cpu)).rejects.toThrow(
      /demo\/vae_decoder: is a folder, not a graph file \(graphs\.vae_decoder\.path in .*folder-graph\.json\): name the \.onnx file in it/,
    );
  });

  it('an empty graph file, as an interrupted copy leaves it', async () => {
    await mkdir(join(dir, 'empty-vae'), { recursive: true });
    await writeFile(join(dir, 'empty-vae/model.onnx'), '');
    const file = await variant('empty-graph', (m) => (m.models['demo-sd15'].graphs.vae_decoder.path = join(dir, 'empty-vae/model.onnx')));
    await expect(createSessions(await loadManifest(file), cpu)).rejects.toThrow(
      /empty-vae\/model\.onnx: is empty \(0 bytes; graphs\.vae_decoder\.path in .*empty-graph\.json\): the copy or export did not finish/,
    );
  });

  it('a graph with the wrong channel count for its role', async () => {
    const file = await pairVariant('nine', (m) => (m.models['demo-sd15'].graphs.unet.path = resolve(MODELS_DIR, 'demo/unet_inpaint/model.onnx')));
    await expect(createSessions(await loadManifest(file), cpu)).rejects.toThrow(
      /models\/demo\/unet_inpaint\/model\.onnx: input 'sample' has 9 channels, the unet role needs 4/,
    );
  });

  it('a VAE or denoiser exported at one fixed size, which would fail every job at another size after its whole generation', async () => {
    // The demo VAE decoder as a static-shape export at 768 px: latent_sample [1, 4, 96, 96].
    const fixed = decodeModel(await readFile(resolve(MODELS_DIR, 'demo/vae_decoder/model.onnx')));
    fixed.graph!.input[0] = valueInfo('latent_sample', 'float32', [1, 4, 96, 96]);
    fixed.graph!.output[0] = valueInfo('sample', 'float32', [1, 3, 768, 768]);
    await mkdir(join(dir, 'vae-fixed'), { recursive: true });
    await writeFile(join(dir, 'vae-fixed/model.onnx'), encodeModel(fixed));
    const file = await variant('vae-fixed', (m) => (m.models['demo-sd15'].graphs.vae_decoder.path = join(dir, 'vae-fixed/model.onnx')));
    await expect(createSessions(await loadManifest(file), cpu)).rejects.toThrow(
      /vae-fixed\/model\.onnx: input 'latent_sample' has a fixed height or width \[1, 4, 96, 96\]; every output size runs through the vae_decoder role, so export it with dynamic height and width axes/,
    );
  });

  it('a denoising graph exported at one batch, which would pass its test step and fail every job of another batch size or guidance', async () => {
    const fixBatch = async (graph: 'denoiser' | 'unet', rows: number): Promise<string> => {
      const model = decodeModel(await readFile(resolve(MODELS_DIR, `demo/${graph}/model.onnx`)));
      const sample = model.graph!.input.find((v) => v.name === 'sample')!;
      const dims = tensorTypeOf(sample)!.dims.map((d, i) => (i === 0 ? rows : (d ?? `d${i}`)));
      model.graph!.input[model.graph!.input.indexOf(sample)] = valueInfo('sample', 'float32', dims);
      const path = join(dir, `${graph}-batch-${rows}/model.onnx`);
      await mkdir(join(dir, `${graph}-batch-${rows}`), { recursive: true });
      await writeFile(path, encodeModel(model));
      return path;
    };
    // A fused denoiser at batch 1 (one image, guidance inside): a batchSize 2 job would fail.
    const one = await fixBatch('denoiser', 1);
    const fused = await variant('denoiser-batch-1', (m) => (m.models['demo-sd15'].graphs.denoiser.path = one));
    await expect(createSessions(await loadManifest(fused), cpu)).rejects.toThrow(
      /denoiser-batch-1\/model\.onnx: input 'sample' has its batch axis fixed at 1 \[1, 4, .*\]; jobs feed the denoiser role as many rows as their images \(twice that with classifier-free guidance\), so export it with a dynamic batch axis/,
    );
    // A UNet at the CFG batch of one image, as static exports often are: cfg 1 (v5s's default) would fail.
    const two = await fixBatch('unet', 2);
    const pair = await pairVariant('unet-batch-2', (m) => (m.models['demo-sd15'].graphs.unet.path = two));
    await expect(createSessions(await loadManifest(pair), cpu)).rejects.toThrow(/unet-batch-2\/model\.onnx: input 'sample' has its batch axis fixed at 2 \[2, 4, /);
  });

  it('a graph missing an input of its role, and name maps that point at the wrong value', async () => {
    const swapped = await pairVariant('swapped', (m) => (m.models['demo-sd15'].graphs.controlnet.path = resolve(MODELS_DIR, 'demo/vae_decoder/model.onnx')));
    await expect(createSessions(await loadManifest(swapped), cpu)).rejects.toThrow(
      /demo\/vae_decoder\/model\.onnx: the controlnet role needs an input 'sample' but the graph's inputs are 'latent_sample'/,
    );
    const mapped = await variant('mapped', (m) => (m.models['demo-sd15'].graphs.text_encoder.outputs = { last_hidden_state: 'pooler_output' }));
    await expect(createSessions(await loadManifest(mapped), cpu)).rejects.toThrow(
      /demo\/text_encoder\/model\.onnx: output 'pooler_output' has rank 2 \[batch, 768\], the text_encoder role needs rank 3/,
    );
    // An optional role mapped to a name the graph lacks: the mapping is wrong, not the graph's own name.
    const misspelt = await variant('optional-mapped', (m) => (m.models['demo-sd15'].graphs.denoiser.inputs = { guidance_scale: 'guidance' }));
    await expect(createSessions(await loadManifest(misspelt), cpu)).rejects.toThrow(
      /the denoiser role needs an input 'guidance' \(mapped by graphs\.denoiser\.inputs\) but the graph's inputs are .*'guidance_scale'/,
    );
    const unknownRole = await variant('role', (m) => (m.models['demo-sd15'].graphs.denoiser.inputs = { latents: 'sample' }));
    await expect(createSessions(await loadManifest(unknownRole), cpu)).rejects.toThrow(/names 'latents', which is not an input role of denoiser/);
  });

  it('outpainting without its graphs loaded, and a captioner without its tokenizer.json', async () => {
    const sessions = await createSessions(await loadManifest(MANIFEST), { ...cpu, roles: ['vae_encoder'] });
    try {
      expect(() => sessions.forOutpainting()).toThrow(/model 'demo-sd15' \(for outpainting\) has no unet_inpaint graph loaded/);
    } finally {
      await sessions.release();
    }
    const file = await variant('captioner-dir', (m) => {
      m.models['demo-sd15'].graphs.captioner_decoder.path = join(dir, 'lonely', 'decoder_model.onnx');
    });
    await mkdir(join(dir, 'lonely'), { recursive: true });
    await copyFile(join(MODELS_DIR, 'demo/captioner/decoder_model.onnx'), join(dir, 'lonely', 'decoder_model.onnx'));
    await expect(createSessions(await loadManifest(file), { ...cpu, roles: ['captioner_encoder', 'captioner_decoder'] })).rejects.toThrow(
      /lonely: captioner of model 'demo-sd15' cannot be loaded: .*tokenizer\.json: cannot read \(ENOENT\)/,
    );
  });

  it('a tokenizer folder that cannot be read', async () => {
    const file = await variant('tok', (m) => (m.models['demo-sd15'].tokenizer = join(dir, 'no-tokenizer')));
    await expect(createSessions(await loadManifest(file), { ...cpu, roles: ['text_encoder', 'unet', 'controlnet', 'vae_decoder'] })).rejects.toThrow(
      /no-tokenizer: tokenizer of model 'demo-sd15' cannot be loaded/,
    );
  });
});

describe('execution providers', () => {
  // This machine has no CUDA provider library (it is installed only in Dockerfile.cuda), so CUDA genuinely fails here.
  it('CUDA that cannot create a session stops the start, naming the graph and the cause', async () => {
    const manifest = await loadManifest(MANIFEST);
    const err = await createSessions(manifest, { ...cpu, executionProvider: { provider: 'cuda', deviceId: 0 }, roles: [] }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect(String(err)).toMatch(/models\/demo\/text_encoder\/model\.onnx \(text_encoder\): cannot create an ONNX Runtime session on cuda: .*Failed to load shared library/);
  });

  it('falls back to CPU, for every graph and with one logged warning, only when asked to (cuda,cpu)', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
    const manifest = await loadManifest(MANIFEST);
    const sessions = await createSessions(manifest, { ...cpu, logger, executionProvider: parseExecutionProvider('cuda,cpu', 0), roles: [] });
    try {
      expect(sessions.provider).toEqual({ provider: 'cpu' });
      const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toMatch(/cuda is unavailable; every graph runs on the CPU \(EXECUTION_PROVIDER=cuda,cpu allows this fallback\)/);
    } finally {
      await sessions.release();
    }
  });
});

describe('tensors follow the graph', () => {
  /** A ControlNet-ready UNet with an int64 scalar timestep and an output named as diffusers' fused export names it. */
  function int64TimestepUnet(): Uint8Array {
    const g = new GraphBuilder('unet');
    const sample = g.input('sample', 'float32', ['batch', 4, 'height', 'width']);
    const t = g.input('timestep', 'int64', []);
    g.input('encoder_hidden_states', 'float32', ['batch', 77, 768]);
    for (const r of CONTROL_RESIDUALS) g.input(r.role, 'float32', ['batch', r.channels, 'h', 'w']);
    g.output(g.add(g.mul(sample, g.f(0)), g.cast(t, 'float32')), 'noise_pred', 'float32', ['batch', 4, 'height', 'width']);
    return g.build();
  }

  it('builds an int64 scalar timestep and reads renamed outputs through the name map', async () => {
    const session = await ort.InferenceSession.create(int64TimestepUnet());
    try {
      const unet = GraphSession.bind('unet', 'fake/unet.onnx', session, { outputs: { out_sample: 'noise_pred' } });
      const ts = unet.timestepTensor(499.6, 2);
      expect([ts.type, ts.dims, (ts.data as BigInt64Array)[0]]).toEqual(['int64', [], 500n]);
      expect(() => GraphSession.bind('unet', 'fake/unet.onnx', session, {})).toThrow(
        /fake\/unet\.onnx: the unet role needs an output 'out_sample' but the graph's outputs are 'noise_pred'/,
      );
    } finally {
      await session.release();
    }
  });

  it('parseManifest reports the file it was given', () => {
    expect(() => parseManifest({ version: 2 }, 'ops/manifest.json')).toThrow(/ops\/manifest\.json: invalid model manifest: version/);
  });
});
