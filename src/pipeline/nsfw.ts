/**
 * The NSFW check of a model's images, whichever checker its manifest names (nsfw-manifest.ts):
 * SD's safety checker (nsfw-safety-checker.ts), OnnxStack's content filter
 * (nsfw-content-filter.ts) or an image classifier (nsfw-classifier.ts). Each gives one verdict
 * per image; the job treats them alike (any flagged image rejects it).
 *
 * The checker is made once at start (loadNsfwChecker, from sessions.ts), where the classifier's
 * labels and every checker's preprocessing are read and checked, so a wrong entry stops the
 * worker instead of a job.
 */
import { dirname } from 'node:path';
import type { RawImage } from '../image/raw.ts';
import { GraphSessionError, type GraphSession } from './graph-session.ts';
import type { GraphRole } from './manifest.ts';
import { loadNsfwClassifier, classifierFlags, type NsfwClassifier } from './nsfw-classifier.ts';
import { contentFilterFlags, type ContentFilter } from './nsfw-content-filter.ts';
import type { NsfwSpec } from './nsfw-manifest.ts';
import { checkerViews, CLIP_PREPROCESS, loadPreprocess, resizeForChecker } from './nsfw-preprocess.ts';
import { safetyCheckerFlags } from './nsfw-safety-checker.ts';

export { CLIP_MEAN, CLIP_SIZE, CLIP_STD } from './nsfw-preprocess.ts';

export interface SafetyChecker {
  readonly kind: 'safety_checker';
  readonly graph: GraphSession;
}

export type NsfwChecker = SafetyChecker | ContentFilter | NsfwClassifier;

/** Shortest edge to 224 (bicubic), centre crop 224×224, RGB: what the safety checker sees. */
export function clipCrop(image: RawImage): Promise<RawImage> {
  return resizeForChecker(image, CLIP_PREPROCESS);
}

/**
 * The checker of a model from its manifest entry and its loaded graphs; undefined when the
 * checker's graph is not loaded (nsfw.checker "none", or a session set without that role).
 * `fileOf` gives a role's graph file, beside which the side files lie.
 */
export async function loadNsfwChecker(
  modelId: string,
  nsfw: NsfwSpec,
  graphs: Readonly<Partial<Record<GraphRole, GraphSession>>>,
  fileOf: (role: GraphRole) => string,
): Promise<NsfwChecker | undefined> {
  switch (nsfw.checker) {
    case 'none':
      return undefined;
    case 'safety_checker':
      return graphs.safety_checker && { kind: 'safety_checker', graph: graphs.safety_checker };
    case 'content_filter': {
      const graph = graphs.content_filter;
      if (!graph) return undefined;
      const preprocess = await loadPreprocess(dirname(fileOf('content_filter')), nsfw.preprocess, CLIP_PREPROCESS, `models.${modelId}.nsfw.preprocess`).catch((err: Error) => {
        throw new GraphSessionError(`content filter of model '${modelId}': ${err.message}`);
      });
      return { kind: 'content_filter', graph, threshold: nsfw.threshold, preprocess };
    }
    case 'classifier': {
      const graph = graphs.nsfw_classifier;
      return graph && loadNsfwClassifier(modelId, nsfw, graph, dirname(fileOf('nsfw_classifier')));
    }
  }
}

/**
 * One boolean per image: true when the checker flags it, or any of the windows a non-square image
 * is checked as (checkerViews: a cover-resizing checker would see only its centre).
 */
export async function detectNsfw(images: readonly RawImage[], c: NsfwChecker): Promise<boolean[]> {
  if (images.length === 0) return [];
  const preprocess = c.kind === 'safety_checker' ? CLIP_PREPROCESS : c.preprocess;
  const views = images.map((image) => checkerViews(image, preprocess));
  const flags = await flagsOf(views.flat(), c);
  let next = 0;
  return views.map((of) => flags.slice(next, (next += of.length)).some(Boolean));
}

function flagsOf(images: readonly RawImage[], c: NsfwChecker): Promise<boolean[]> {
  switch (c.kind) {
    case 'safety_checker':
      return safetyCheckerFlags(images, c.graph);
    case 'content_filter':
      return contentFilterFlags(images, c);
    case 'classifier':
      return classifierFlags(images, c);
  }
}
