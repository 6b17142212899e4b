/**
 * Face detectors (docs/models.md §2.4.1; src/pipeline/face-detect.ts): the worker serves the
 * UltraFace contract and refuses the Ultralytics YOLOv8-face layout at start.
 * Verified against:
 *   - onnx/models vision/body_analysis/ultraface/README.md: version-RFB-320 (input 1×3×240×320)
 *     and version-RFB-640 (1×3×480×640), RGB, mean 127, scale 1/128, outputs scores (1×4420×2)
 *     and boxes (1×4420×4) for RFB-320;
 *   - Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB convert_to_onnx.py (input_names
 *     ['input'], output_names ['scores', 'boxes'], fixed dummy sizes: no dynamic axes),
 *     vision/ssd/ssd.py (is_test: softmax scores; priors decoded to corner-form boxes in the
 *     graph) and run_video_face_detect_onnx.py (threshold on scores[..., 1], hard NMS);
 *   - ultralytics engine/exporter.py (input 'images', output 'output0'). The YOLOv8-face
 *     output's channel count (4 box + 1 score + 15 landmark values) is derronqi/yolov8-face's,
 *     unverified here.
 */
import type { ExportContract } from './contract.ts';
import { FLOAT, graphMatches } from './match.ts';

function ultraface(width: number, height: number, priors: number): ExportContract {
  return {
    id: `ultraface-rfb-${width}`,
    exporter: 'ONNX model zoo (Linzaer UltraFace)',
    graph: `version-RFB-${width}.onnx`,
    role: 'face_detector',
    verdict: 'serves',
    how: `input stretched to ${width}×${height}, (v−127)/128; faces where scores[..., 1] > faceDetector.scoreThreshold, hard NMS at faceDetector.iouThreshold, boxes × image size; enhance=face refines each`,
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'input', types: FLOAT, dims: [1, 3, height, width] }],
        outputs: [
          { name: 'scores', types: FLOAT, dims: [1, priors, 2] },
          { name: 'boxes', types: FLOAT, dims: [1, priors, 4] },
        ],
      }),
  };
}

export const ROWS: ExportContract[] = [
  ultraface(320, 240, 4420),
  ultraface(640, 480, 17640),
  {
    id: 'ultralytics-yolov8-face',
    exporter: 'Ultralytics (yolov8-face)',
    graph: 'yolov8n-face.onnx (model.export(format="onnx"))',
    role: 'face_detector',
    verdict: 'refuses',
    how: 'one output0 [1, 20, 8400] of raw anchor-free predictions (box, score, landmarks) needs its own decoding: export an UltraFace detector instead (docs/models.md §2.4.1)',
    refusal: "the face_detector role needs an input 'input'",
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'images', types: FLOAT, dims: ['*', 3, '*', '*'] }],
        outputs: [{ name: 'output0', types: FLOAT, dims: ['*', '*', '*'] }],
      }),
  },
];
