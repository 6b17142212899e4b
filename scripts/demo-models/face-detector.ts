/**
 * The demo face detector: a hand-built graph with exactly the outputs of the ONNX model zoo's
 * UltraFace version-RFB-320 (onnx/models vision/body_analysis/ultraface; exported by
 * Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB convert_to_onnx.py):
 *   input  `input`  float32 [1, 3, 240, 320], RGB, (v - 127) / 128;
 *   output `scores` float32 [1, 4420, 2], softmax over (background, face) per prior;
 *   output `boxes`  float32 [1, 4420, 4], corners x1, y1, x2, y2 as fractions of the input.
 * Its 4420 priors are UltraFace's too: strides 8/16/32/64 with square sizes 10,16,24 / 32,48 /
 * 64,96 / 128,192,256 input pixels, centred on each stride cell.
 *
 * It is not a neural network: it finds the discs of face-pattern.ts. Per pixel, `skin` is
 * closeness to FACE_SKIN and `dark` is low luma. For each prior of size S, average pools over a
 * 2S window give the skin mass and its first and second moments, and the dark mass; one over a
 * 3S window gives the skin mass around it. The box is the skin's moment ellipse in the 2S window
 * (centre = mean, width = 4·σx, height = 4·σy: exact for a uniform ellipse), and the face logit
 * is the smallest of four margins: the 2S window holds all the skin of the 3S one (a whole,
 * isolated blob), the blob's mass matches the area of its moment ellipse (one ellipse, not two
 * blobs or a patchwork), its window has dark "eyes" (at least 2 % of its mass; dark pixels
 * beside the face count too, so a face over a QR code is still one), and it is big enough. A
 * bit of the window's fill is added so tight priors outrank loose ones.
 */
import { GraphBuilder, type Value } from './graph.ts';
import { FACE_SKIN } from './face-pattern.ts';

export const DETECTOR_WIDTH = 320;
export const DETECTOR_HEIGHT = 240;
/** UltraFace's priors: [stride, square sizes in input pixels]. */
export const DETECTOR_PRIORS: readonly (readonly [number, readonly number[]])[] = [
  [8, [10, 16, 24]],
  [16, [32, 48]],
  [32, [64, 96]],
  [64, [128, 192, 256]],
];
/** Squared RGB distance (in [0,1] units) at which a pixel stops being skin. */
const SKIN_TOLERANCE = 0.02;
const MIN_MASS = 120;

/** Average pool with kernel k, stride s, centred on the cells (i + 0.5)·s, ceil(size / s) cells per axis. */
function pool(g: GraphBuilder, x: Value, k: number, s: number, width: number, height: number): Value {
  const begin = k / 2 - s / 2;
  const end = (size: number): number => (Math.ceil(size / s) - 1) * s + k - size - begin;
  return g.op('AveragePool', [x], {
    kernel_shape: [k, k],
    strides: [s, s],
    pads: [begin, begin, end(height), end(width)],
    count_include_pad: 1,
  });
}

/** The detector at UltraFace's RFB-320 size (the shipped demo graph), or another fixed size (RFB-640: 640 × 480). */
export function buildFaceDetector(width = DETECTOR_WIDTH, height = DETECTOR_HEIGHT): Uint8Array {
  const g = new GraphBuilder('face_detector');
  const input = g.input('input', 'float32', [1, 3, height, width]);
  const rgb = g.add(g.mul(input, g.f(128 / 255)), g.f(127 / 255));
  const diff = g.sub(rgb, g.constF32('skin_tone', [1, 3, 1, 1], FACE_SKIN.map((v) => v / 255)));
  const clip01 = (x: Value): Value => g.op('Clip', [x, g.f(0), g.f(1)]);
  const skin = clip01(g.sub(g.f(1), g.div(g.reduceSum(g.mul(diff, diff), [1]), g.f(SKIN_TOLERANCE))));
  const luma = g.reduceSum(g.mul(rgb, g.constF32('luma_weights', [1, 3, 1, 1], [0.299, 0.587, 0.114])), [1]);
  const dark = clip01(g.mul(g.sub(g.f(0.3), luma), g.f(10)));
  const xs = g.constF32('pixel_x', [1, 1, 1, width], Array.from({ length: width }, (_, i) => i + 0.5));
  const ys = g.constF32('pixel_y', [1, 1, height, 1], Array.from({ length: height }, (_, i) => i + 0.5));
  const fx = g.mul(skin, xs);
  const fy = g.mul(skin, ys);
  // [skin, skin·x, skin·y, skin·x², skin·y², dark]: pooled together per prior size.
  const maps = g.op('Concat', [skin, fx, fy, g.mul(fx, xs), g.mul(fy, ys), dark], { axis: 1 });

  const logits: Value[] = [];
  const boxes: Value[] = [];
  const eps = g.f(1e-6);
  for (const [stride, sizes] of DETECTOR_PRIORS) {
    for (const size of sizes) {
      const pooled = pool(g, maps, 2 * size, stride, width, height);
      const [m, mx, my, mxx, myy, md] = [0, 1, 2, 3, 4, 5].map((c) => g.slice(pooled, 1, c, c + 1)) as [Value, Value, Value, Value, Value, Value];
      const around = pool(g, skin, 3 * size, stride, width, height);
      const me = g.op('Max', [m, eps]);
      const ex = g.div(mx, me);
      const ey = g.div(my, me);
      const sigma = (m2: Value, e: Value): Value => g.op('Sqrt', [g.op('Relu', [g.sub(g.div(m2, me), g.mul(e, e))])]);
      const w = g.mul(sigma(mxx, ex), g.f(4));
      const h = g.mul(sigma(myy, ey), g.f(4));
      const mass = g.mul(m, g.f(4 * size * size));
      const contained = g.div(g.mul(m, g.f(4 / 9)), g.op('Max', [around, eps]));
      const oneEllipse = g.div(mass, g.op('Max', [g.mul(g.mul(w, h), g.f(Math.PI / 4)), eps]));
      const eyes = g.div(md, me);
      const margin = (x: Value, at: number, gain: number): Value => g.mul(g.sub(x, g.f(at)), g.f(gain));
      const logit = g.add(
        g.op('Min', [
          margin(contained, 0.97, 60),
          margin(oneEllipse, 0.8, 40),
          margin(eyes, 0.02, 200),
          margin(mass, MIN_MASS, 0.1),
        ]),
        g.mul(m, g.f(4)),
      );
      const flat = (x: Value, last: number): Value => g.reshape(g.op('Transpose', [x], { perm: [0, 2, 3, 1] }), [1, -1, last]);
      logits.push(flat(logit, 1));
      const half = (v: Value): Value => g.mul(v, g.f(0.5));
      const nx = (v: Value): Value => g.div(v, g.f(width));
      const ny = (v: Value): Value => g.div(v, g.f(height));
      const corners = g.op('Concat', [nx(g.sub(ex, half(w))), ny(g.sub(ey, half(h))), nx(g.add(ex, half(w))), ny(g.add(ey, half(h)))], { axis: 1 });
      boxes.push(flat(corners, 4));
    }
  }
  const logit = g.op('Concat', logits, { axis: 1 }); // [1, N, 1]
  const scores = g.op('Softmax', [g.op('Concat', [g.mul(logit, g.f(0)), logit], { axis: 2 })], { axis: 2 });
  const n = DETECTOR_PRIORS.reduce((sum, [stride, sizes]) => sum + sizes.length * Math.ceil(width / stride) * Math.ceil(height / stride), 0);
  g.output(scores, 'scores', 'float32', [1, n, 2]);
  g.output(g.op('Concat', boxes, { axis: 1 }), 'boxes', 'float32', [1, n, 4]);
  return g.build({ docString: 'qr-art demo face detector: UltraFace RFB-320 inputs/outputs, finds the discs of scripts/demo-models/face-pattern.ts' });
}
