/**
 * The face detector (pipeline/face-detect.ts) on the demo UltraFace-contract graph: it finds each
 * face of the documented test pattern (scripts/demo-models/face-pattern.ts) where it is, and
 * nothing on a plain image, a plain skin-toned image, eyeless discs or a QR code; NMS as UltraFace's.
 */
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectFaces, hardNms, type FaceBox } from '../../src/pipeline/face-detect.ts';
import { GraphSession } from '../../src/pipeline/graph-session.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { toRgb } from '../../src/image/canvas.ts';
import { FACE_SKIN, facePattern, type PatternFace } from '../../scripts/demo-models/face-pattern.ts';

const GRAPH = fileURLToPath(new URL('../../models/demo/face_detector/model.onnx', import.meta.url));
const SETTINGS = { scoreThreshold: 0.7, iouThreshold: 0.5, maxFaces: 4, inputWidth: 320, inputHeight: 240 };
let detector: GraphSession;

beforeAll(async () => {
  const session = await ort.InferenceSession.create(GRAPH, { intraOpNumThreads: 1 });
  detector = GraphSession.bind('face_detector', GRAPH, session, {});
});
afterAll(async () => detector?.release());

/** The found box matches the face: centre within 10 % of its diameter, each side within 15 %. */
function expectMatches(box: FaceBox, face: PatternFace): void {
  expect(Math.abs((box.x1 + box.x2) / 2 - face.cx)).toBeLessThan(0.1 * face.d);
  expect(Math.abs((box.y1 + box.y2) / 2 - face.cy)).toBeLessThan(0.1 * face.d);
  expect(Math.abs(box.x2 - box.x1 - face.d)).toBeLessThan(0.15 * face.d);
  expect(Math.abs(box.y2 - box.y1 - face.d)).toBeLessThan(0.15 * face.d);
}

function nearest(boxes: readonly FaceBox[], face: PatternFace): FaceBox {
  const dist = (b: FaceBox): number => Math.hypot((b.x1 + b.x2) / 2 - face.cx, (b.y1 + b.y2) / 2 - face.cy);
  return [...boxes].sort((a, b) => dist(a) - dist(b))[0]!;
}

describe('detectFaces', () => {
  it('finds each face of the test pattern at the detector size, and only those', async () => {
    const faces: PatternFace[] = [
      { cx: 70, cy: 120, d: 90 },
      { cx: 250, cy: 55, d: 40 },
      { cx: 245, cy: 180, d: 56 },
    ];
    const boxes = await detectFaces(facePattern(320, 240, faces), detector, SETTINGS);
    expect(boxes).toHaveLength(3);
    for (const face of faces) expectMatches(nearest(boxes, face), face);
    for (const box of boxes) expect(box.score).toBeGreaterThan(0.7);
  });

  it('finds faces in a square image of another size (stretched to the input, boxes back in image pixels)', async () => {
    const faces: PatternFace[] = [{ cx: 40, cy: 44, d: 40 }, { cx: 100, cy: 96, d: 36 }];
    const boxes = await detectFaces(facePattern(128, 128, faces), detector, SETTINGS);
    expect(boxes).toHaveLength(2);
    for (const face of faces) expectMatches(nearest(boxes, face), face);
  });

  it('keeps at most maxFaces, the largest, largest first', async () => {
    const faces: PatternFace[] = [
      { cx: 250, cy: 55, d: 40 },
      { cx: 70, cy: 120, d: 90 },
      { cx: 245, cy: 180, d: 56 },
    ];
    const boxes = await detectFaces(facePattern(320, 240, faces), detector, { ...SETTINGS, maxFaces: 2 });
    expect(boxes).toHaveLength(2);
    expectMatches(boxes[0]!, faces[1]!);
    expectMatches(boxes[1]!, faces[2]!);
  });

  it('keeps a large face scored lower over smaller faces scored higher (maxFaces is by size)', async () => {
    // A detector's answer, as UltraFace gives it: one 0.5 x 0.7 face at 0.80, four small ones at 0.92-0.95.
    const boxes = [[0.1, 0.1, 0.6, 0.8], [0.7, 0.05, 0.75, 0.1], [0.8, 0.05, 0.85, 0.1], [0.7, 0.8, 0.75, 0.85], [0.8, 0.8, 0.85, 0.85]];
    const scores = [0.8, 0.95, 0.94, 0.93, 0.92];
    const answering = {
      path: 'answering.onnx',
      input: () => ({ shape: [1, 3, 240, 320] }),
      floatType: () => 'float32',
      run: async () => ({
        scores: new ort.Tensor('float32', Float32Array.from(scores.flatMap((p) => [1 - p, p])), [1, 5, 2]),
        boxes: new ort.Tensor('float32', Float32Array.from(boxes.flat()), [1, 5, 4]),
      }),
    } as unknown as GraphSession;
    const found = await detectFaces(toRgb(facePattern(400, 300, [])), answering, SETTINGS);
    expect(found).toHaveLength(4);
    expect(found[0]!.score).toBeCloseTo(0.8, 5);
    expect(found[0]!.x2 - found[0]!.x1).toBeCloseTo(200, 3);
  });

  it('finds nothing on a plain image, a plain skin-toned one, eyeless skin discs or a QR code', async () => {
    const plain = facePattern(160, 160, []);
    const skin = facePattern(160, 160, [], [...FACE_SKIN]);
    const eyeless = facePattern(160, 160, []);
    for (let y = 0; y < 160; y++) for (let x = 0; x < 160; x++) if ((x - 80) ** 2 + (y - 80) ** 2 < 40 ** 2) eyeless.data.set(FACE_SKIN, (y * 160 + x) * 3);
    const canvas = { width: 256, height: 256 };
    const qr = toRgb(renderControlImage({ content: 'https://example.com/face', pattern: 's1', canvas, placement: placementFor(canvas, 0.9), background: 'white', errorCorrectionLevel: 'H' }).image);
    for (const image of [plain, skin, eyeless, qr]) expect(await detectFaces(image, detector, SETTINGS)).toEqual([]);
  });
});

describe('hardNms', () => {
  it('drops boxes overlapping a better one beyond the IoU, keeps the rest best first', () => {
    const box = (x: number, score: number): FaceBox => ({ x1: x, y1: 0, x2: x + 10, y2: 10, score });
    const kept = hardNms([box(0, 0.8), box(1, 0.9), box(30, 0.75), box(6, 0.85)], 0.5);
    expect(kept.map((b) => b.score)).toEqual([0.9, 0.85, 0.75]);
  });
});
