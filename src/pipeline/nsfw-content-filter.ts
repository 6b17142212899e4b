/**
 * OnnxStack's content filter (OnnxStack.Converter/ContentFilter/models.py, ContentFilterModel):
 * SD's safety checker exported without its last step. In clip_input [1,3,224,224] (batch fixed at
 * 1: exported from a 1-image dummy without dynamic axes; fp16 in and out once Olive optimises it),
 * out concept_scores [1,17]: per concept, cosine(image, concept) − the concept's threshold, plus
 * 0.01 everywhere when a "special care" concept matched. OnnxStack's ContentFilterPipeline calls an
 * image explicit when any score is above `threshold` (0.02 by default); diffusers' checker flags
 * above 0. The verdict rule here is OnnxStack's, the threshold the manifest's.
 *
 * Preprocessing: the weights are the safety checker's, trained on CLIP's input (CLIP_PREPROCESS),
 * which is the default here. OnnxStack itself feeds a cover resize with ImageNet mean/std
 * (OnnxStack.Core/Image/OnnxImage.cs GetClipImageFeatureTensor); `nsfw.preprocess` can say so.
 */
import type { RawImage } from '../image/raw.ts';
import type { GraphSession } from './graph-session.ts';
import { batchSizes, checkerBatch, type ImagePreprocess } from './nsfw-preprocess.ts';
import { floatTensor, toFloat32 } from './tensors.ts';

export interface ContentFilter {
  readonly kind: 'content_filter';
  readonly graph: GraphSession;
  /** Flagged when any concept score is above it. */
  readonly threshold: number;
  readonly preprocess: ImagePreprocess;
}

/** Every concept score of each image (rows of [B, concepts]). */
export async function conceptScores(images: readonly RawImage[], filter: ContentFilter): Promise<Float32Array[]> {
  const { graph } = filter;
  const rows: Float32Array[] = [];
  let done = 0;
  for (const size of batchSizes(images.length, graph.input('clip_input').shape[0])) {
    const { pixels, dims } = await checkerBatch(images.slice(done, done + size), filter.preprocess);
    const out = await graph.run({ clip_input: floatTensor(graph.floatType('clip_input'), pixels, dims) }, ['concept_scores']);
    const scores = toFloat32(out.concept_scores!);
    const width = scores.length / size;
    if (!Number.isInteger(width) || width === 0) throw new Error(`${graph.path}: concept_scores has ${scores.length} values for ${size} images`);
    for (let i = 0; i < size; i++) rows.push(scores.slice(i * width, (i + 1) * width));
    done += size;
  }
  return rows;
}

/** One boolean per image: true when any concept score is above the threshold. */
export async function contentFilterFlags(images: readonly RawImage[], filter: ContentFilter): Promise<boolean[]> {
  return (await conceptScores(images, filter)).map((row) => row.some((s) => s > filter.threshold));
}
