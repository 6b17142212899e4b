/**
 * Every NSFW checker a manifest can name gives the right verdict end to end: each export-matrix
 * fixture of the NSFW family (SD's safety checker as diffusers exports it, OnnxStack's content
 * filter, an optimum ViT classifier with its label config) is loaded as the worker loads it, a
 * normal prompt and an `nsfwdemo` prompt are generated with the demo graphs and checked by the
 * model's checker the way the inference thread checks them, and outpainting applies the same
 * checker itself. A classifier whose manifest names a label its config lacks stops the start,
 * naming the label and the labels there are.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/nsfw.ts';
import { classifierConfigJson } from '../../scripts/demo-models/nsfw-checkers.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { matchContracts } from '../../src/models/contracts/index.ts';
import { readGraphFacts } from '../../src/models/graph-facts.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { detectNsfw } from '../../src/pipeline/nsfw.ts';
import { checkerViews, CLIP_PREPROCESS, preprocessFromConfig } from '../../src/pipeline/nsfw-preprocess.ts';
import { outpaint } from '../../src/pipeline/outpaint.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function built(id: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `qrart-nsfw-${id}-`));
  dirs.push(dir);
  return ROWS.find((r) => r.contract.id === id)!.build(dir);
}

const open = async (manifestFile: string): Promise<PipelineSessions> =>
  createSessions(await loadManifest(manifestFile), {
    executionProvider: { provider: 'cpu' },
    logger: pino({ level: 'silent' }),
    intraOpThreads: 1,
    roles: ['vae_encoder', 'unet_inpaint', 'safety_checker', 'content_filter', 'nsfw_classifier'],
  });

const canvas = { width: 64, height: 64 };
const control = renderControlImage({ content: 'NSFW', pattern: 's1', canvas, placement: placementFor(canvas, 0.85), background: 'gray', errorCorrectionLevel: 'H' }).image;
const request = (prompt: string, batchSize = 1): Txt2ImgRequest => ({
  prompt,
  negativePrompt: '',
  seed: 77,
  batchSize,
  steps: 2,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control,
  controlScale: 0.3,
  controlStart: 0,
  controlEnd: 1,
  width: 64,
  height: 64,
  nativeSize: 64,
});

function flat(rgb: readonly [number, number, number], side = 64): RawImage {
  const data = new Uint8Array(side * side * 3);
  for (let i = 0; i < data.length; i += 3) data.set(rgb, i);
  return rawImage(data, side, side, 3);
}

describe.each([
  ['diffusers-safety-checker', 'safety_checker'],
  ['onnxstack-content-filter', 'content_filter'],
  ['optimum-vit-nsfw-classifier', 'classifier'],
] as const)('%s', (id, kind) => {
  it(`flags an nsfwdemo generation and passes a normal one, by the ${kind} checker the manifest names`, async () => {
    const sessions = await open(await built(id));
    try {
      const model = sessions.models.get('demo-sd15')!;
      expect(model.nsfw?.kind).toBe(kind);
      const target = sessions.forWorkflow('generate_qr_art_v5', 'universal');
      const normal = await generate(request('a blue lake', 2), target);
      const trigger = await generate(request('nsfwdemo garden'), target);
      expect(await detectNsfw([...normal.images, ...trigger.images], model.nsfw!)).toEqual([false, false, true]);

      // Outpainting applies the model's checker itself: a magenta picture (which the demo encoder marks) is flagged, a grey one not.
      const outpaintingOf = async (picture: RawImage) =>
        (await outpaint({ image: picture, padding: { left: 16, right: 0, top: 0, bottom: 16 }, type: 'one_shot', prompt: 'a wall', seed: 3, tuning: { steps: 2 } }, sessions.forOutpainting())).nsfw;
      expect(await outpaintingOf(flat([128, 128, 128]))).toBe(false);
      expect(await outpaintingOf(flat([255, 0, 255]))).toBe(true);
    } finally {
      await sessions.release();
    }
  }, 60_000);
});

describe('a checker that crops the centre (the safety checker) sees all of a non-square image', () => {
  const paint = (width: number, height: number, magenta: (x: number, y: number) => boolean): RawImage => {
    const data = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(magenta(x, y) ? [255, 0, 255] : [128, 128, 128], (y * width + x) * 3);
    return rawImage(data, width, height, 3);
  };

  it('checks windows along the long side, end to end: what lies outside the centre crop is flagged too', async () => {
    // The demo checker flags a view whose mean colour is near magenta; the centre crop of each of
    // these is not (it is about 61% magenta), the window at the magenta end is.
    const sessions = await open('models/manifest.json');
    try {
      const nsfw = sessions.forWorkflow('generate_qr_art_v5', 'universal').model.nsfw!;
      expect(nsfw.kind).toBe('safety_checker');
      const wide = paint(1024, 576, (x) => x < 576);
      const tall = paint(576, 1024, (_x, y) => y >= 448);
      expect(await detectNsfw([wide, tall, paint(1024, 576, () => false), paint(768, 768, () => true)], nsfw)).toEqual([true, true, false, true]);
    } finally {
      await sessions.release();
    }
  }, 60_000);

  it('windows of the crop aspect cover the image, overlapping; a stretching checker sees the image as it is', () => {
    const views = checkerViews(paint(3840, 2160, () => false), CLIP_PREPROCESS);
    expect(views.map((v) => [v.width, v.height])).toEqual([
      [2160, 2160],
      [2160, 2160],
    ]);
    expect(checkerViews(paint(1024, 1024, () => false), CLIP_PREPROCESS)).toHaveLength(1);
    expect(checkerViews(paint(432, 768, () => false), CLIP_PREPROCESS)).toHaveLength(2);
    const stretch = { ...CLIP_PREPROCESS, resize: { kind: 'stretch' as const, width: 224, height: 224 } };
    expect(checkerViews(paint(1024, 576, () => false), stretch)).toHaveLength(1);
  });
});

describe('classifier labels and preprocessing', () => {
  it('refuses to start when the manifest names a label config.json does not have, listing the labels it has', async () => {
    await expect(open(await built('vit-classifier-unknown-label'))).rejects.toThrow(
      /NSFW classifier of model 'demo-sd15': models\.demo-sd15\.nsfw\.labels: 'porn' is not a label of .*nsfw_classifier\/config\.json \(id2label: normal, nsfw\)/,
    );
  });

  it('refuses a config.json whose labels are more than the graph has logits', async () => {
    const manifestFile = await built('optimum-vit-nsfw-classifier');
    await writeFile(join(manifestFile, '..', 'nsfw_classifier/config.json'), classifierConfigJson(['drawings', 'neutral', 'nsfw']));
    await expect(open(manifestFile)).rejects.toThrow(/logits has 2 classes, .*config\.json names 3/);
  });

  it('refuses a checker whose graph the model does not list, and a second checker graph that would never run', async () => {
    const manifestFile = await built('onnxstack-content-filter');
    const json = JSON.parse(await (await import('node:fs/promises')).readFile(manifestFile, 'utf8'));
    const missing = structuredClone(json);
    delete missing.models['demo-sd15'].graphs.content_filter;
    await writeFile(manifestFile, JSON.stringify(missing));
    await expect(loadManifest(manifestFile)).rejects.toThrow(/models\.demo-sd15\.graphs\.content_filter: missing, but models\.demo-sd15\.nsfw\.checker 'content_filter' runs that graph/);
    const both = structuredClone(json);
    both.models['demo-sd15'].graphs.safety_checker = { path: json.models['demo-sd15'].graphs.content_filter.path };
    await writeFile(manifestFile, JSON.stringify(both));
    await expect(loadManifest(manifestFile)).rejects.toThrow(/nsfw\.checker: 'content_filter', but graphs\.safety_checker is listed too/);
  });

  it("reads a ViTImageProcessor's and a CLIPImageProcessor's preprocessor_config.json", () => {
    const vit = preprocessFromConfig({ do_resize: true, size: { height: 224, width: 224 }, resample: 2, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }, 'vit');
    expect(vit).toMatchObject({ resize: { kind: 'stretch', width: 224, height: 224 }, kernel: 'linear', mean: [0.5, 0.5, 0.5] });
    const clip = preprocessFromConfig({ size: { shortest_edge: 256 }, do_center_crop: true, crop_size: { height: 224, width: 224 }, resample: 3, image_mean: [0.48, 0.45, 0.4], image_std: [0.26, 0.26, 0.27] }, 'clip');
    expect(clip).toMatchObject({ resize: { kind: 'cover', shortestEdge: 256, width: 224, height: 224 }, kernel: 'cubic' });
    expect(() => preprocessFromConfig({ size: { height: 224, width: 224 }, resample: 4, image_mean: [0, 0, 0], image_std: [1, 1, 1] }, 'box')).toThrow(/box: resample 4 is not one of/);
  });
});

describe('the NSFW contracts', () => {
  it('each serving fixture graph matches its own contract and no other', async () => {
    for (const [id, role, path] of [
      ['diffusers-safety-checker', 'safety_checker', 'safety_checker/model.onnx'],
      ['onnxstack-content-filter', 'content_filter', 'content_filter/model.onnx'],
      ['optimum-vit-nsfw-classifier', 'nsfw_classifier', 'nsfw_classifier/model.onnx'],
    ] as const) {
      const manifestFile = await built(id);
      const facts = await readGraphFacts(join(manifestFile, '..', path), role);
      expect(matchContracts(facts).map((c) => c.id), id).toEqual([id]);
    }
  });
});
