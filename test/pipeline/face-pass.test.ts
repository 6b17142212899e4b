/**
 * The face pass (pipeline/face-pass.ts) on the demo graphs: it refines the squares around the
 * faces the demo detector finds (the test pattern of scripts/demo-models/face-pattern.ts), with a
 * feathered edge, the same way for the same seed; an image without faces is returned untouched
 * with no step run; a model without a face_detector graph runs no pass; a code under the pass
 * still scans.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toRgb } from '../../src/image/canvas.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { enhanceFaces, FACE, facePrompts, faceSquare, faceSteps, findFaceSquares, type Square } from '../../src/pipeline/face-pass.ts';
import type { DiffusionModel, PipelineSessions } from '../../src/pipeline/sessions.ts';
import type { Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { scanCheck } from '../../src/qr/scan.ts';
import { facePattern, FACE_SKIN, type PatternFace } from '../../scripts/demo-models/face-pattern.ts';
import { demoSessions } from '../helpers/demo-sessions.ts';

let withDetector: PipelineSessions;
let withoutDetector: PipelineSessions;
let target: DiffusionModel;

beforeAll(async () => {
  withDetector = await demoSessions(['vae_encoder', 'face_detector']);
  withoutDetector = await demoSessions(['vae_encoder']);
  target = withDetector.forWorkflow('generate_qr_art_v5', 'universal');
});
afterAll(async () => {
  await withDetector?.release();
  await withoutDetector?.release();
});

const SIDE = 128;
const canvas = { width: SIDE, height: SIDE };
const control = renderControlImage({ content: 'FACE1', pattern: 's1', canvas, placement: placementFor(canvas, 0.9), background: 'gray', errorCorrectionLevel: 'H' });
const request: Txt2ImgRequest = {
  prompt: 'a portrait',
  seed: 5,
  batchSize: 2,
  steps: 6,
  guidance: 6,
  scheduler: 'dpmpp_2m_karras',
  control: control.image,
  controlScale: 1,
  controlStart: 0,
  controlEnd: 1,
  nativeSize: SIDE,
  width: SIDE,
  height: SIDE,
  refine: false,
};

const differs = (a: RawImage, b: RawImage, p: number): boolean => a.data[p * 3] !== b.data[p * 3] || a.data[p * 3 + 1] !== b.data[p * 3 + 1] || a.data[p * 3 + 2] !== b.data[p * 3 + 2];
const inside = (sq: Square, x: number, y: number): boolean => x >= sq.x && x < sq.x + sq.side && y >= sq.y && y < sq.y + sq.side;

describe('the face pass', () => {
  const face: PatternFace = { cx: 44, cy: 48, d: 40 };
  const portrait = facePattern(SIDE, SIDE, [face]);
  const plain = facePattern(SIDE, SIDE, []);

  it('squares each face found with the margin, inside the image', async () => {
    const [squares] = await findFaceSquares([portrait], target);
    expect(squares).toHaveLength(1);
    const sq = squares![0]!;
    expect(Math.abs(sq.side - face.d * (1 + 2 * FACE.margin))).toBeLessThan(0.2 * face.d);
    expect(Math.abs(sq.x + sq.side / 2 - face.cx)).toBeLessThan(0.1 * face.d);
    expect(Math.abs(sq.y + sq.side / 2 - face.cy)).toBeLessThan(0.1 * face.d);
    expect(faceSquare({ x1: -20, y1: 100, x2: 60, y2: 140 }, SIDE, SIDE)).toEqual({ x: 0, y: 8, side: 120 });
  });

  it('refines only the square around each face, feathered, identically for the same seed; an image without faces is untouched', async () => {
    const squares = await findFaceSquares([portrait, plain], target);
    expect(squares[1]).toEqual([]);
    let ticks = 0;
    const shown: number[] = [];
    const hooks = { tick: () => ticks++, onImage: (i: number) => shown.push(i) };
    const [a, untouched] = (await enhanceFaces([portrait, plain], squares, request, target, hooks)) as [RawImage, RawImage];
    expect(ticks).toBe(faceSteps(request.steps, target));
    expect(shown).toEqual([0, 1]);
    expect(untouched).toBe(plain);
    const sq = squares[0]![0]!;
    let changedInside = 0;
    for (let y = 0; y < SIDE; y++) {
      for (let x = 0; x < SIDE; x++) {
        const changed = differs(portrait, a, y * SIDE + x);
        if (!inside(sq, x, y)) expect(changed, `pixel ${x},${y} outside the square`).toBe(false);
        else if (changed) changedInside++;
      }
    }
    expect(changedInside).toBeGreaterThan(sq.side * sq.side * 0.3);
    // Feathered: the square's outermost ring moves less than its middle.
    const meanMove = (ring: (x: number, y: number) => boolean): number => {
      let sum = 0;
      let n = 0;
      for (let y = sq.y; y < sq.y + sq.side; y++) {
        for (let x = sq.x; x < sq.x + sq.side; x++) {
          if (!ring(x - sq.x, y - sq.y)) continue;
          const p = (y * SIDE + x) * 3;
          for (let c = 0; c < 3; c++) sum += Math.abs(a.data[p + c]! - portrait.data[p + c]!);
          n += 3;
        }
      }
      return sum / n;
    };
    const edge = (x: number, y: number): boolean => Math.min(x, y, sq.side - 1 - x, sq.side - 1 - y) === 0;
    const middle = (x: number, y: number): boolean => Math.min(x, y, sq.side - 1 - x, sq.side - 1 - y) >= sq.side / 4;
    expect(meanMove(edge)).toBeLessThan(meanMove(middle) / 2);
    const [again] = await enhanceFaces([portrait], [squares[0]!], request, target, { tick: () => undefined });
    expect(again!.data).toEqual(a.data);
  });

  it('puts its own words before a long prompt and a preset, where CLIP\'s 75 tokens still read them', async () => {
    const long = `a castle, ${'tower, '.repeat(80)}at dusk`;
    const texts = facePrompts({ prompt: long, negativePrompt: 'text', preset: 'cinematic' });
    expect(texts.prompt.startsWith(`${FACE.prompt}, `)).toBe(true);
    expect(texts.prompt).toContain('a castle');
    expect(texts.negativePrompt.startsWith(`${FACE.negative}, `)).toBe(true);
    expect(texts.negativePrompt).toContain('text');
  });

  it('runs no pass and counts no steps for a model without a face_detector graph', async () => {
    const bare = withoutDetector.forWorkflow('generate_qr_art_v5', 'universal');
    expect(faceSteps(30, bare)).toBe(0);
    expect(await findFaceSquares([portrait], bare)).toEqual([[]]);
    expect(faceSteps(30, target)).toBeGreaterThan(0);
  });

  it('leaves a code under a face readable after redrawing it (the control crop guides the refinement)', async () => {
    const side = 256;
    const big = { width: side, height: side };
    const code = renderControlImage({ content: 'https://example.com/f', pattern: 's1', canvas: big, placement: placementFor(big, 0.8), background: 'white', errorCorrectionLevel: 'H' });
    const image = toRgb(code.image);
    const data = new Uint8Array(image.data);
    // A large face over the lower right of the code, away from the finder patterns.
    const drawn = facePattern(side, side, [{ cx: 170, cy: 170, d: 90 }], [0, 0, 0]);
    for (let p = 0; p < side * side; p++) if (drawn.data[p * 3] !== 0) data.set(drawn.data.subarray(p * 3, p * 3 + 3), p * 3);
    const withFace = rawImage(data, side, side, 3);
    expect(data.includes(FACE_SKIN[0])).toBe(true);
    const codeRequest = { ...request, batchSize: 1, control: code.image, width: side, height: side, nativeSize: side };
    const squares = await findFaceSquares([withFace], target);
    expect(squares[0]).toHaveLength(1);
    const [out] = await enhanceFaces([withFace], squares, codeRequest, target, { tick: () => undefined });
    let changed = 0;
    for (let p = 0; p < side * side; p++) if (differs(withFace, out!, p)) changed++;
    expect(changed).toBeGreaterThan(squares[0]![0]!.side ** 2 / 3);
    expect((await scanCheck(out!, 'https://example.com/f')).scannable).toBe(true);
  });
});
