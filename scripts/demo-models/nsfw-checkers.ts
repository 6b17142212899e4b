/**
 * Demo NSFW checkers with the contracts of real exports other than SD's safety checker, judging
 * the demo's own NSFW signal: like the demo safety checker (safety-checker.ts), they measure the distance d
 * of the input's mean colour from magenta, which only the `nsfwdemo` trigger paints (MAGENTA_CAP
 * keeps ordinary images at d ≥ 0.41; trigger images measure d ≤ 0.11).
 *
 * content filter (OnnxStack's ContentFilter contract)
 *   in  clip_input float32 [1,3,224,224], CLIP-normalised (the safety checker's input)
 *   out concept_scores float32 [1,17]: concept k scores w_k·(R² − d²), w from 0.25 to 1 and
 *       R = MAGENTA_DISTANCE, so with OnnxStack's threshold 0.02 an image is flagged when d < 0.21.
 *
 * image classifier (optimum image-classification export of a ViT fine-tune, with its side files)
 *   in  pixel_values float32 [batch_size,num_channels,height,width], (rgb − 0.5)/0.5
 *   out logits float32 [batch_size,2]: [0, CLASSIFIER_GAIN·(R² − d²)] for id2label
 *       {0: normal, 1: nsfw}, so p(nsfw) ≥ 0.5 exactly when d < R.
 *   config.json and preprocessor_config.json as Falconsai/nsfw_image_detection ships them
 *   (ViTImageProcessor: 224×224, bilinear, mean = std = 0.5).
 */
import { GraphBuilder, type Value } from './graph.ts';
import { CLIP_MEAN, CLIP_STD, MAGENTA_DISTANCE } from './safety-checker.ts';

export const CONCEPTS = 17;
const CONCEPT_WEIGHTS = Array.from({ length: CONCEPTS }, (_, k) => 0.25 + (0.75 * k) / (CONCEPTS - 1));
export const CLASSIFIER_LABELS = ['normal', 'nsfw'] as const;
const CLASSIFIER_GAIN = 200;

/** R² − d² per image [B,1], from normalised pixels [B,3,H,W] de-normalised with mean/std. */
function magentaMargin(g: GraphBuilder, pixels: Value, mean: readonly number[], std: readonly number[]): Value {
  const rgb = g.add(g.mul(pixels, g.constF32(undefined, [1, 3, 1, 1], std)), g.constF32(undefined, [1, 3, 1, 1], mean));
  const avg = g.op('ReduceMean', [rgb], { axes: [2, 3], keepdims: 0 }); // [B,3]
  const diff = g.sub(avg, g.constF32(undefined, [3], [1, 0, 1]));
  const dist2 = g.reduceSum(g.mul(diff, diff), [1], 1); // [B,1]
  return g.sub(g.f(MAGENTA_DISTANCE ** 2), dist2);
}

export function buildContentFilter(): Uint8Array {
  const g = new GraphBuilder('content_filter');
  const clip = g.input('clip_input', 'float32', [1, 3, 224, 224]);
  const scores = g.mul(magentaMargin(g, clip, CLIP_MEAN, CLIP_STD), g.constF32(undefined, [1, CONCEPTS], CONCEPT_WEIGHTS));
  g.output(scores, 'concept_scores', 'float32', [1, CONCEPTS]);
  return g.build({ docString: 'qr-art demo content filter (OnnxStack contract): concept scores from the mean colour near magenta; see scripts/demo-models/nsfw-checkers.ts' });
}

export function buildNsfwClassifier(): Uint8Array {
  const g = new GraphBuilder('nsfw_classifier');
  const px = g.input('pixel_values', 'float32', ['batch_size', 'num_channels', 'height', 'width']);
  const nsfw = g.mul(magentaMargin(g, px, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]), g.f(CLASSIFIER_GAIN));
  const logits = g.op('Concat', [g.mul(nsfw, g.f(0)), nsfw], { axis: 1 });
  g.output(logits, 'logits', 'float32', ['batch_size', CLASSIFIER_LABELS.length]);
  return g.build({ docString: 'qr-art demo NSFW classifier (optimum ViT image-classification contract); see scripts/demo-models/nsfw-checkers.ts' });
}

/** config.json as transformers writes it for a ViTForImageClassification fine-tune (the fields the worker reads, and a few more). */
export function classifierConfigJson(labels: readonly string[] = CLASSIFIER_LABELS): string {
  const id2label = Object.fromEntries(labels.map((l, i) => [String(i), l]));
  const label2id = Object.fromEntries(labels.map((l, i) => [l, i]));
  return `${JSON.stringify({ architectures: ['ViTForImageClassification'], model_type: 'vit', image_size: 224, num_channels: 3, id2label, label2id, problem_type: 'single_label_classification' }, null, 2)}\n`;
}

/** preprocessor_config.json of a ViTImageProcessor (resample 2: bilinear). */
export function classifierPreprocessorJson(): string {
  return `${JSON.stringify({ do_normalize: true, do_rescale: true, do_resize: true, image_mean: [0.5, 0.5, 0.5], image_processor_type: 'ViTImageProcessor', image_std: [0.5, 0.5, 0.5], resample: 2, rescale_factor: 1 / 255, size: { height: 224, width: 224 } }, null, 2)}\n`;
}
