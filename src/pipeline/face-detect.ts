/**
 * Face detection with a `face_detector` graph of the UltraFace contract (the ONNX model zoo's
 * version-RFB-320 / RFB-640, exported by Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB):
 *
 *   input  `input`  [1, 3, H, W] float: RGB stretched to W × H (320 × 240 or 640 × 480), (v - 127) / 128;
 *   output `scores` [1, N, 2]: softmax over (background, face) per prior box;
 *   output `boxes`  [1, N, 4]: corners x1, y1, x2, y2 as fractions of the input's width and height.
 *
 * Verified against onnx/models vision/body_analysis/ultraface/README.md (sizes, mean 127, scale
 * 1/128, RGB, plain resize), the exporter's convert_to_onnx.py (names input/scores/boxes), its
 * vision/ssd/ssd.py (is_test: softmax scores, priors decoded to corner-form boxes inside the
 * graph) and run_video_face_detect_onnx.py + vision/utils/box_utils_numpy.py (decoding: keep
 * scores[..., 1] > threshold, hard NMS over the 200 best, boxes × image width/height). Because the
 * input is a stretch, not a letterbox, the fractions map straight onto the original image.
 */
import type { RawImage } from '../image/raw.ts';
import { resizeImage } from '../image/decode.ts';
import type { GraphSession } from './graph-session.ts';
import type { ModelSpec } from './manifest.ts';
import { floatTensor, packRgbPlanar, toFloat32 } from './tensors.ts';

export type FaceDetectorSettings = ModelSpec['faceDetector'];

/** A face in image pixels (corners), with the detector's face probability. */
export interface FaceBox {
  readonly x1: number;
  readonly y1: number;
  readonly x2: number;
  readonly y2: number;
  readonly score: number;
}

/** box_utils_numpy.hard_nms's candidate_size: only the best this many boxes enter NMS. */
const NMS_CANDIDATES = 200;

/** The input size: the graph's fixed sides, else the manifest's. */
export function detectorInputSize(detector: GraphSession, settings: FaceDetectorSettings): { width: number; height: number } {
  const shape = detector.input('input').shape;
  const fixed = (axis: number, fallback: number): number => (typeof shape[axis] === 'number' && (shape[axis] as number) > 0 ? (shape[axis] as number) : fallback);
  return { width: fixed(3, settings.inputWidth), height: fixed(2, settings.inputHeight) };
}

/** The faces in `image`, best score first, at most settings.maxFaces after NMS. */
export async function detectFaces(image: RawImage, detector: GraphSession, settings: FaceDetectorSettings): Promise<FaceBox[]> {
  const { width, height } = detectorInputSize(detector, settings);
  const resized = await resizeImage(image, width, height, 'fill');
  const planes = new Float32Array(3 * width * height);
  // (v - 127) / 128 = v/255 · (255/128) - 127/128
  packRgbPlanar(resized, planes, 0, 255 / 128, -127 / 128);
  const out = await detector.run({ input: floatTensor(detector.floatType('input'), planes, [1, 3, height, width]) }, ['scores', 'boxes']);
  const scores = toFloat32(out.scores!);
  const boxes = toFloat32(out.boxes!);
  const n = scores.length / 2;
  if (boxes.length !== n * 4) throw new Error(`${detector.path}: scores has ${n} priors but boxes ${boxes.length / 4}`);
  const found: FaceBox[] = [];
  for (let i = 0; i < n; i++) {
    const score = scores[i * 2 + 1]!;
    if (!(score > settings.scoreThreshold)) continue;
    found.push({ x1: boxes[i * 4]! * image.width, y1: boxes[i * 4 + 1]! * image.height, x2: boxes[i * 4 + 2]! * image.width, y2: boxes[i * 4 + 3]! * image.height, score });
  }
  // maxFaces keeps the largest faces (the manifest's promise), not the most certain: a foreground
  // face scored a little lower must not give way to small faces in the background.
  const area = (b: FaceBox): number => (b.x2 - b.x1) * (b.y2 - b.y1);
  return hardNms(found, settings.iouThreshold)
    .map((box, i) => ({ box, i }))
    .sort((a, b) => area(b.box) - area(a.box) || a.i - b.i)
    .slice(0, settings.maxFaces)
    .map(({ box }) => box);
}

/** Greedy NMS: the best box stays, every box overlapping it by more than `iou` goes; repeat. Ties keep prior order. */
export function hardNms(boxes: readonly FaceBox[], iou: number): FaceBox[] {
  const candidates = boxes
    .map((box, i) => ({ box, i }))
    .sort((a, b) => b.box.score - a.box.score || a.i - b.i)
    .slice(0, NMS_CANDIDATES)
    .map((c) => c.box);
  const kept: FaceBox[] = [];
  for (const box of candidates) if (kept.every((k) => iouOf(k, box) <= iou)) kept.push(box);
  return kept;
}

function area(b: { x1: number; y1: number; x2: number; y2: number }): number {
  return Math.max(0, b.x2 - b.x1) * Math.max(0, b.y2 - b.y1);
}

/** Intersection over union, with box_utils_numpy's 1e-5 guard. */
export function iouOf(a: FaceBox, b: FaceBox): number {
  const overlap = area({ x1: Math.max(a.x1, b.x1), y1: Math.max(a.y1, b.y1), x2: Math.min(a.x2, b.x2), y2: Math.min(a.y2, b.y2) });
  return overlap / (area(a) + area(b) - overlap + 1e-5);
}
