/**
 * The export matrix's exercises (scripts/demo-models/exports/row.ts), run for real: every row that
 * serves or adapts and lists exercises beyond txt2img is built, its manifest's sessions are made
 * once (as a worker makes them), and each exercise goes through the pipeline at the smallest size
 * and step count that reaches its path:
 *
 *   txt2img   one 64 px image                        → exactly 64 × 64
 *   refine    64 px generated, refined to 96 px      → 96 × 96, the refinement ran (VAE encoder rows: the same bytes twice)
 *   outpaint  64 px picture + 16 px on the left      → 80 × 64 (VAE encoder rows: the same bytes twice)
 *   face      a drawn face found and redrawn         → one square, pixels inside it changed, outside unchanged
 *             (VAE encoder rows: the same bytes again for the same seed)
 *   nsfw      a normal and an `nsfwdemo` generation  → the manifest's checker says [false, true]
 *   caption   the captioner on a generated image     → a non-empty caption
 *
 * export-matrix.test.ts checks that every row loads and steps every role; this file checks that
 * each row does the job it is listed for.
 */
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { facePattern } from '../../scripts/demo-models/face-pattern.ts';
import { FIXTURES, type Exercise, type ExportRow } from '../../scripts/demo-models/exports/index.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { captionImage } from '../../src/pipeline/captioner.ts';
import { enhanceFaces, faceSteps, findFaceSquares } from '../../src/pipeline/face-pass.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { detectNsfw } from '../../src/pipeline/nsfw.ts';
import { outpaint } from '../../src/pipeline/outpaint.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';

const rows = FIXTURES.filter((r) => r.contract.verdict !== 'refuses' && (r.exercises ?? ['txt2img']).some((e) => e !== 'txt2img'));

let root: string | undefined;
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function open(row: ExportRow): Promise<PipelineSessions> {
  root ??= await mkdtemp(join(tmpdir(), 'qrart-exercises-'));
  const dir = join(root, row.contract.id);
  await mkdir(dir, { recursive: true });
  const manifest = await loadManifest(await row.build(dir));
  return createSessions(manifest, { executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, models: Object.keys(manifest.models) });
}

const controlOf = (side: number) => {
  const canvas = { width: side, height: side };
  return renderControlImage({ content: 'EX1', pattern: 's1', canvas, placement: placementFor(canvas, 0.85), background: 'gray', errorCorrectionLevel: 'H' }).image;
};
const CONTROL_64 = controlOf(64);
const CONTROL_96 = controlOf(96);
const CONTROL_128 = controlOf(128);

const request = (over: Partial<Txt2ImgRequest> = {}): Txt2ImgRequest => ({
  prompt: 'a blue lake',
  negativePrompt: '',
  seed: 77,
  batchSize: 1,
  steps: 2,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control: CONTROL_64,
  controlScale: 0.8,
  controlStart: 0,
  controlEnd: 1,
  width: 64,
  height: 64,
  nativeSize: 64,
  refine: false,
  ...over,
});

const bytes = (im: RawImage): Buffer => Buffer.from(im.data);
const picture = rawImage(Uint8Array.from({ length: 64 * 64 * 3 }, (_, i) => (i * 37) % 251), 64, 64, 3);

type Run = (s: PipelineSessions, row: ExportRow) => Promise<void>;

const EXERCISES: Readonly<Record<Exercise, Run>> = {
  async txt2img(s) {
    const { images } = await generate(request(), s.forWorkflow('generate_qr_art_v5', 'universal'));
    expect(images).toHaveLength(1);
    expect([images[0]!.width, images[0]!.height]).toEqual([64, 64]);
  },
  async refine(s, row) {
    const target = s.forWorkflow('generate_qr_art_v5', 'universal');
    const r = request({ width: 96, height: 96, control: CONTROL_96, refine: { strength: 0.5 } });
    const a = await generate(r, target);
    expect(a.generated).toEqual({ width: 64, height: 64 });
    expect(a.refined).toMatchObject({ width: 96, height: 96 });
    expect([a.images[0]!.width, a.images[0]!.height]).toEqual([96, 96]);
    if (row.contract.role === 'vae_encoder') expect(bytes((await generate(r, target)).images[0]!)).toEqual(bytes(a.images[0]!));
  },
  async outpaint(s, row) {
    const r = { image: picture, padding: { left: 16, right: 0, top: 0, bottom: 0 }, type: 'one_shot' as const, prompt: 'a blue lake', seed: 5, tuning: { steps: 1 } };
    const a = await outpaint(r, s.forOutpainting());
    expect([a.image.width, a.image.height]).toEqual([80, 64]);
    if (row.contract.role === 'vae_encoder') expect(bytes((await outpaint(r, s.forOutpainting())).image)).toEqual(bytes(a.image));
  },
  async face(s, row) {
    const target = s.forWorkflow('generate_qr_art_v5', 'universal');
    const portrait = facePattern(128, 128, [{ cx: 44, cy: 48, d: 40 }]);
    const squares = await findFaceSquares([portrait], target);
    expect(squares[0]).toHaveLength(1);
    const r = request({ width: 128, height: 128, nativeSize: 128, control: CONTROL_128, prompt: 'a portrait', steps: 4 });
    expect(faceSteps(r.steps, target)).toBeGreaterThan(0);
    const [out] = await enhanceFaces([portrait], squares, r, target, { tick: () => undefined });
    const sq = squares[0]![0]!;
    let inside = 0;
    let outside = 0;
    for (let y = 0; y < 128; y++) {
      for (let x = 0; x < 128; x++) {
        const p = (y * 128 + x) * 3;
        if (out!.data[p] === portrait.data[p] && out!.data[p + 1] === portrait.data[p + 1] && out!.data[p + 2] === portrait.data[p + 2]) continue;
        if (x >= sq.x && x < sq.x + sq.side && y >= sq.y && y < sq.y + sq.side) inside++;
        else outside++;
      }
    }
    expect(inside).toBeGreaterThan(0);
    expect(outside).toBe(0);
    if (row.contract.role === 'vae_encoder') expect(bytes((await enhanceFaces([portrait], squares, r, target, { tick: () => undefined }))[0]!)).toEqual(bytes(out!));
  },
  async nsfw(s) {
    const model = s.models.get('demo-sd15')!;
    const target = s.forWorkflow('generate_qr_art_v5', 'universal');
    const normal = await generate(request(), target);
    const trigger = await generate(request({ prompt: 'nsfwdemo garden' }), target);
    expect(model.nsfw, 'the manifest names a checker').toBeDefined();
    expect(await detectNsfw([...normal.images, ...trigger.images], model.nsfw!)).toEqual([false, true]);
  },
  async caption(s) {
    const model = s.models.get('demo-sd15')!;
    const { images } = await generate(request(), s.forWorkflow('generate_qr_art_v5', 'universal'));
    const caption = await captionImage(images[0]!, model, { maxTokens: 4, beams: 1 });
    expect(caption.trim().length).toBeGreaterThan(0);
  },
};

describe('export matrix exercises', () => {
  it('lists at least one row per exercise', () => {
    const listed = new Set(rows.flatMap((r) => r.exercises ?? []));
    expect([...listed].sort()).toEqual(['caption', 'face', 'nsfw', 'outpaint', 'refine', 'txt2img']);
  });

  for (const row of rows) {
    const exercises = row.exercises ?? ['txt2img'];
    it(`${row.contract.id}: ${exercises.join(', ')}`, async () => {
      const sessions = await open(row);
      try {
        for (const e of exercises) await EXERCISES[e](sessions, row);
      } finally {
        await sessions.release();
      }
    }, 60_000);
  }
});
