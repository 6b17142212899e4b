/**
 * The demo safety checker flags exactly its documented trigger. Hundreds of ordinary requests
 * through the real demo graphs (words of the demo corpus and vocabulary, colour words, short and
 * long prompts, negative prompts, presets, the API's whole cfg and qrStrength ranges, every
 * scheduler, square and oblong sizes, refinement) must all stay far from the checker's decision,
 * and every prompt with `nsfwdemo` must land deep inside it. The score is the checker's own
 * statistic, the distance of the crop's mean colour from magenta, so the margins are asserted,
 * not only the flags. Sizes and steps are the smallest the pipeline takes, to fit a CI budget.
 *
 * Prints the measured margins; run alone with `npx vitest run test/pipeline/nsfw-margin.test.ts`.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAGENTA_CAP } from '../../scripts/demo-models/latent-space.ts';
import { MAGENTA_DISTANCE } from '../../scripts/demo-models/safety-checker.ts';
import { COLOUR_WORD_LIST } from '../../scripts/demo-models/text-encoder.ts';
import { DEMO_CORPUS } from '../../scripts/demo-models/vocab.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { clipCrop, detectNsfw } from '../../src/pipeline/nsfw.ts';
import { outpaint, type OutpaintRequest } from '../../src/pipeline/outpaint.ts';
import type { SchedulerName } from '../../src/pipeline/schedulers/index.ts';
import type { DiffusionModel, OutpaintModel, PipelineSessions } from '../../src/pipeline/sessions.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { PRESETS } from '../../src/workflows/presets.ts';
import { demoSessions } from '../helpers/demo-sessions.ts';

const TRIGGER = 'nsfwdemo';
/** The least distance an unmarked image can have: its φ is at most MAGENTA_CAP, and φ falls by at most √1.5 per unit of distance. */
const ORDINARY_BOUND = (1 - MAGENTA_CAP) / Math.sqrt(1.5);

let sessions: PipelineSessions;
let txt2img: DiffusionModel;
let outpainting: OutpaintModel;
let vocabularyWords: string[];

beforeAll(async () => {
  sessions = await demoSessions();
  txt2img = sessions.forWorkflow('generate_qr_art_v5', 'universal');
  outpainting = sessions.forOutpainting();
  const vocab = JSON.parse(await readFile(new URL('../../models/demo/tokenizer/vocab.json', import.meta.url), 'utf8')) as Record<string, number>;
  vocabularyWords = Object.keys(vocab)
    .filter((token) => /^[a-z]{3,}<\/w>$/.test(token))
    .map((token) => token.slice(0, -'</w>'.length))
    .filter((word) => word !== TRIGGER);
});

afterAll(async () => {
  await sessions?.release();
});

const corpusWords = [...new Set(DEMO_CORPUS.toLowerCase().match(/[a-z]+/g)!)];
/** The demo palette's words and other colour names (hashed), the magenta family included on purpose. */
const colourWords = [...COLOUR_WORD_LIST, 'magenta', 'violet', 'lavender', 'fuchsia', 'crimson', 'gold', 'teal', 'indigo', 'rose', 'plum'];
const SCHEDULERS: readonly SchedulerName[] = ['dpmpp_2m_karras', 'euler_a', 'lcm', 'ddim'];
/** The v5 API's cfg range (1..20, v5s 1..3) and qrStrength range (0..3), edges included. */
const GUIDANCES = [1, 1.5, 3, 6, 7, 7.5, 12, 20];
const CONTROL_SCALES = [0, 0.3, 1.3, 2, 3];
/** width, height, native size: the smallest square, oblong frames, and an upscale that runs the refinement pass. */
const SIZES = [
  [64, 64, 64],
  [64, 64, 64],
  [96, 64, 96],
  [64, 112, 112],
  [128, 128, 64],
] as const;

type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;

function words(rng: Rng, count: number): string[] {
  return Array.from({ length: count }, () => {
    const r = rng();
    return r < 0.3 ? pick(rng, colourWords) : r < 0.65 ? pick(rng, corpusWords) : pick(rng, vocabularyWords);
  });
}

/** Mostly short prompts, some long ones (CLIP truncates past 75 tokens). */
function promptWords(rng: Rng): string[] {
  return words(rng, rng() < 0.2 ? 20 + Math.floor(rng() * 50) : 1 + Math.floor(rng() * 8));
}

const controls = new Map<string, RawImage>();
function qrControl(width: number, height: number): RawImage {
  const key = `${width}x${height}`;
  if (!controls.has(key)) {
    const canvas = { width, height };
    controls.set(key, renderControlImage({ content: `https://example.com/${key}`, pattern: 's1', canvas, placement: placementFor(canvas, 0.85), background: 'gray', errorCorrectionLevel: 'H' }).image);
  }
  return controls.get(key)!;
}

function randomRequest(rng: Rng, withTrigger: boolean): Txt2ImgRequest {
  const prompt = promptWords(rng);
  // Anywhere among the first words: past CLIP's 75 tokens a word is cut off and is not in the prompt at all.
  if (withTrigger) prompt.splice(Math.floor(rng() * Math.min(prompt.length + 1, 12)), 0, TRIGGER);
  const negative = rng() < 0.25 ? [] : rng() < 0.5 ? words(rng, 1 + Math.floor(rng() * 6)) : [pick(rng, colourWords)];
  const [width, height, nativeSize] = pick(rng, SIZES);
  const preset = rng() < 0.15 ? pick(rng, PRESETS) : undefined;
  return {
    prompt: prompt.join(rng() < 0.3 ? ', ' : ' '),
    negativePrompt: negative.join(' '),
    ...(preset ? { preset } : {}),
    seed: Math.floor(rng() * 2 ** 32),
    batchSize: rng() < 0.1 ? 2 : 1,
    steps: 2 + Math.floor(rng() * 3),
    guidance: pick(rng, GUIDANCES),
    scheduler: pick(rng, SCHEDULERS),
    control: qrControl(width, height),
    controlScale: pick(rng, CONTROL_SCALES),
    controlStart: 0,
    controlEnd: 1,
    width,
    height,
    nativeSize,
  };
}

/** The checker's statistic, computed from the crop it sees: distance of the mean colour from magenta (1, 0, 1). */
async function magentaDistance(image: RawImage): Promise<number> {
  const crop = await clipCrop(image);
  const sum = [0, 0, 0];
  for (let i = 0; i < crop.data.length; i += 3) for (let c = 0; c < 3; c++) sum[c]! += crop.data[i + c]! / 255;
  const [r, g, b] = sum.map((v) => v / (crop.data.length / 3)) as [number, number, number];
  return Math.hypot(r - 1, g, b - 1);
}

interface Scored {
  readonly distance: number;
  readonly flagged: boolean;
  readonly what: string;
}

async function score(images: readonly RawImage[], what: string): Promise<Scored[]> {
  const flags = await detectNsfw(images, sessions.models.get('demo-sd15')!.nsfw!);
  return Promise.all(images.map(async (image, i) => ({ distance: await magentaDistance(image), flagged: flags[i]!, what })));
}

const describeRequest = (r: Txt2ImgRequest): string =>
  JSON.stringify({ prompt: r.prompt.slice(0, 80), negativePrompt: r.negativePrompt, preset: r.preset, seed: r.seed, cfg: r.guidance, qrStrength: r.controlScale, scheduler: r.scheduler, steps: r.steps, size: `${r.width}x${r.height}/${r.nativeSize}` });

async function txt2imgScores(seed: number, count: number, withTrigger: boolean): Promise<Scored[]> {
  const rng = mulberry32(seed);
  const scores: Scored[] = [];
  for (let i = 0; i < count; i++) {
    const request = randomRequest(rng, withTrigger);
    scores.push(...(await score((await generate(request, txt2img)).images, describeRequest(request))));
  }
  return scores;
}

/**
 * A violet picture as near magenta as an ordinary image gets (φ from 0.3 to 0.48, just under the
 * decoder's cap and the encoder's mark), so the fill continues a colour guidance can push toward magenta.
 */
function violetPicture(width: number, height: number): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const phi = 0.3 + (0.18 * x) / (width - 1);
      const grey = 0.45 + (0.1 * y) / (height - 1);
      // R = B = grey + φ/3 and G = grey − 2φ/3: mean `grey`, and (R+B)/2 − G = φ exactly.
      const rgb = [grey + phi / 3, grey - (2 * phi) / 3, grey + phi / 3];
      data.set(rgb.map((v) => Math.round(Math.min(1, Math.max(0, v)) * 255)), (y * width + x) * 3);
    }
  return rawImage(data, width, height, 3);
}

function summary(label: string, scores: readonly Scored[]): string {
  const sorted = [...scores].sort((a, b) => a.distance - b.distance);
  return `${label}: ${scores.length} images, distance from magenta ${sorted[0]!.distance.toFixed(3)}..${sorted.at(-1)!.distance.toFixed(3)}`;
}

describe('the demo NSFW checker flags its trigger and nothing else', () => {
  it('ordinary txt2img requests stay well outside its radius; trigger prompts land well inside', async () => {
    const ordinary = await txt2imgScores(20261123, 320, false);
    const triggered = await txt2imgScores(7, 60, true);
    const nearest = ordinary.reduce((a, b) => (b.distance < a.distance ? b : a));
    const farthest = triggered.reduce((a, b) => (b.distance > a.distance ? b : a));
    console.info(
      `${summary('ordinary', ordinary)}; ${summary('trigger', triggered)}; flagged within ${MAGENTA_DISTANCE}` +
        ` (unmarked images cannot come nearer than ${ORDINARY_BOUND.toFixed(3)})\n  nearest ordinary: ${nearest.what}\n  farthest trigger: ${farthest.what}`,
    );
    // The graph's flags are this statistic against the radius.
    for (const s of [...ordinary, ...triggered]) expect(s.flagged, s.what).toBe(s.distance < MAGENTA_DISTANCE);
    expect(ordinary.filter((s) => s.flagged).map((s) => s.what)).toEqual([]);
    expect(triggered.filter((s) => !s.flagged).map((s) => s.what)).toEqual([]);
    // Margins, not just flags: the ordinary side keeps the decoder's bound (8-bit rounding aside),
    // the trigger side stays far inside.
    expect(nearest.distance, nearest.what).toBeGreaterThan(ORDINARY_BOUND - 0.005);
    expect(ORDINARY_BOUND - MAGENTA_DISTANCE).toBeGreaterThan(0.15);
    expect(farthest.distance, farthest.what).toBeLessThan(MAGENTA_DISTANCE / 2);
  }, 120_000);

  it('ordinary outpainting of a violet picture is not flagged, whatever the prompt and cfg', async () => {
    const rng = mulberry32(99);
    const scores: Scored[] = [];
    const side = (): number => 16 + 16 * Math.floor(rng() * 4);
    for (let i = 0; i < 16; i++) {
      const request: OutpaintRequest = {
        image: violetPicture(64, 64),
        padding: { left: side(), right: side(), top: side(), bottom: side() },
        type: 'one_shot',
        prompt: promptWords(rng).join(' '),
        negativePrompt: rng() < 0.5 ? pick(rng, colourWords) : words(rng, 3).join(' '),
        seed: Math.floor(rng() * 2 ** 32),
        tuning: { steps: 3, guidance: pick(rng, GUIDANCES), scheduler: pick(rng, SCHEDULERS) },
      };
      const result = await outpaint(request, outpainting);
      expect(result.nsfw).toBe(false);
      scores.push(...(await score([result.image], JSON.stringify({ prompt: request.prompt, negativePrompt: request.negativePrompt, padding: request.padding, cfg: request.tuning!.guidance }))));
    }
    const nearest = scores.reduce((a, b) => (b.distance < a.distance ? b : a));
    console.info(`${summary('ordinary outpainting', scores)}\n  nearest: ${nearest.what}`);
    expect(nearest.distance, nearest.what).toBeGreaterThan(ORDINARY_BOUND - 0.005);
  }, 60_000);
});
