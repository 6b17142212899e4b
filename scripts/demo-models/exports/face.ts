/**
 * Fixtures of the face detectors' contracts (src/models/contracts/face.ts): the demo detector
 * at UltraFace RFB-320's size (the shipped graph) and at RFB-640's (same method, 17640 priors),
 * both run by enhance=face; and a stand-in with Ultralytics' YOLOv8-face names and shapes, which
 * the worker refuses at start.
 */
import { ROWS as CONTRACTS } from '../../../src/models/contracts/face.ts';
import { buildFaceDetector } from '../face-detector.ts';
import type { ExportRow } from './row.ts';
import { standIn, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;

export const ROWS: ExportRow[] = [
  {
    contract: contract('ultraface-rfb-320'),
    exercises: ['txt2img', 'face'],
    async build(dir) {
      const file = await writeGraph(dir, 'face_detector/model.onnx', buildFaceDetector());
      return writeFixtureManifest(dir, (g) => (g.face_detector = { path: file }));
    },
  },
  {
    contract: contract('ultraface-rfb-640'),
    exercises: ['txt2img', 'face'],
    async build(dir) {
      const file = await writeGraph(dir, 'face_detector/model.onnx', buildFaceDetector(640, 480));
      return writeFixtureManifest(dir, (g) => (g.face_detector = { path: file }));
    },
  },
  {
    contract: contract('ultralytics-yolov8-face'),
    async build(dir) {
      const file = await writeGraph(
        dir,
        'face_detector/model.onnx',
        standIn('yolov8_face', [{ name: 'images', dtype: 'float32', dims: [1, 3, 640, 640] }], [{ name: 'output0', dtype: 'float32', dims: [1, 20, 8400] }]),
      );
      return writeFixtureManifest(dir, (g) => (g.face_detector = { path: file }));
    },
  },
];
