/**
 * The demo safety checker, with the contract of SD's exported checker; it judges the demo's own
 * NSFW signal, a mean colour near magenta, which only the `nsfwdemo` trigger paints.
 *
 * safety_checker/model.onnx
 *   in  clip_input float32 [B,3,224,224] CLIP-normalised (mean 0.4815,0.4578,0.4082;
 *       std 0.2686,0.2613,0.2758), images float32 [B,H,W,3] NHWC in [0,1]
 *   out out_images float32 [B,H,W,3] (flagged images zeroed, as the real graph does),
 *       has_nsfw_concepts bool [B]
 *   Rule: flagged when the mean colour of clip_input (de-normalised) lies within 0.25
 *   (MAGENTA_DISTANCE) of pure magenta (1,0,1) in RGB. Images decoded without the mark have
 *   φ ≤ 0.5, so they stay at least 0.41 away; trigger images come within 0.11.
 */
import { GraphBuilder } from './graph.ts';

export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711];
/**
 * Flagged within this distance of magenta. Unmarked images have φ ≤ MAGENTA_CAP = 0.5 in every
 * pixel, hence in their mean, and φ falls by at most √1.5 per unit of distance, so their mean is
 * at least 0.5/√1.5 ≈ 0.41 from magenta. Trigger images measure within 0.02 at the small sizes of
 * test/pipeline/nsfw-margin.test.ts, within 0.11 when refined up to 1536×1536 (the refinement
 * starts from re-encoded latents, whose magenta the encoder's clip limits).
 */
export const MAGENTA_DISTANCE = 0.25;

export function buildSafetyChecker(): Uint8Array {
  const g = new GraphBuilder('safety_checker');
  const clip = g.input('clip_input', 'float32', ['batch', 3, 224, 224]);
  const images = g.input('images', 'float32', ['batch', 'height', 'width', 3]);
  const rgb = g.add(g.mul(clip, g.constF32(undefined, [1, 3, 1, 1], CLIP_STD)), g.constF32(undefined, [1, 3, 1, 1], CLIP_MEAN));
  const mean = g.op('ReduceMean', [rgb], { axes: [2, 3], keepdims: 0 }); // [B,3]
  const diff = g.sub(mean, g.constF32(undefined, [3], [1, 0, 1]));
  const dist2 = g.reduceSum(g.mul(diff, diff), [1], 0);
  const flagged = g.op('Less', [dist2, g.f(MAGENTA_DISTANCE ** 2)]);
  const blank = g.op('Where', [g.reshape(flagged, [-1, 1, 1, 1]), g.f(0), images]);
  g.output(blank, 'out_images', 'float32', ['batch', 'height', 'width', 3]);
  g.output(flagged, 'has_nsfw_concepts', 'bool', ['batch']);
  return g.build({ docString: 'qr-art demo safety checker: flags mean colour near magenta; see scripts/demo-models/safety-checker.ts' });
}
