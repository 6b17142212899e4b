/**
 * The manifest's `models.<id>.nsfw` entry: which NSFW checker a model's images go through and how
 * its graph's scores become a verdict (docs/models.md §2.3). Kept beside the checkers rather than
 * in manifest.ts, which imports the schema and the cross-field rule from here.
 *
 *   safety_checker  graphs.safety_checker, SD's own (the default): the graph gives the flags.
 *   content_filter  graphs.content_filter, OnnxStack's export of the same CLIP checker without its
 *                   last comparison: flagged when any concept score exceeds `threshold`.
 *   classifier      graphs.nsfw_classifier, an image classifier (a ViT fine-tune exported by
 *                   optimum): flagged when the softmax probabilities of the `labels` it names
 *                   add up to `threshold` or more; labels are checked against the config.json
 *                   beside the graph at start.
 *   none            no check, said explicitly (inference-thread.ts warns at start).
 */
import { z } from 'zod';

const comment = z.string().optional();
const rgb = (item: z.ZodNumber) => z.tuple([item, item, item]);

/**
 * How the checker's input is made when its graph folder has no preprocessor_config.json (or to
 * override it): resize to `size` (cover: shortest edge, then centre crop; stretch: both sides),
 * then (v/255 − mean)/std per channel.
 */
export const NsfwPreprocessSchema = z.strictObject({
  size: z.number().int().min(16).max(1024),
  resize: z.enum(['cover', 'stretch']),
  resample: z.enum(['nearest', 'bilinear', 'bicubic', 'lanczos']).default('bicubic'),
  mean: rgb(z.number()),
  std: rgb(z.number().positive()),
});
export type NsfwPreprocess = z.infer<typeof NsfwPreprocessSchema>;

/** OnnxStack's ContentFilterPipeline flags `concept_scores > 0.02` (its `threshold` default). */
export const CONTENT_FILTER_THRESHOLD = 0.02;
/** An image is flagged when the NSFW labels' probabilities add up to at least this. */
export const CLASSIFIER_THRESHOLD = 0.5;

export const NsfwSpecSchema = z
  .discriminatedUnion('checker', [
    z.strictObject({ checker: z.literal('safety_checker'), comment }),
    z.strictObject({ checker: z.literal('none'), comment }),
    z.strictObject({
      checker: z.literal('content_filter'),
      /** Flagged when any concept score is above this (OnnxStack: 0.02; diffusers' own rule is 0). */
      threshold: z.number().min(-1).max(1).default(CONTENT_FILTER_THRESHOLD),
      preprocess: NsfwPreprocessSchema.optional(),
      comment,
    }),
    z.strictObject({
      checker: z.literal('classifier'),
      /** Labels of config.json's id2label that mean NSFW. */
      labels: z.array(z.string().min(1)).min(1),
      threshold: z.number().gt(0).lt(1).default(CLASSIFIER_THRESHOLD),
      preprocess: NsfwPreprocessSchema.optional(),
      comment,
    }),
  ])
  .default({ checker: 'safety_checker' });
export type NsfwSpec = z.infer<typeof NsfwSpecSchema>;
export type NsfwCheckerName = NsfwSpec['checker'];

/** The graph each checker runs. */
export const CHECKER_GRAPH = { safety_checker: 'safety_checker', content_filter: 'content_filter', classifier: 'nsfw_classifier' } as const;
export type NsfwGraphRole = (typeof CHECKER_GRAPH)[keyof typeof CHECKER_GRAPH];

/**
 * A model serves unchecked images only when its manifest entry says so; the checker's graph must
 * be listed, and no other checker's graph (it would be loaded and never run).
 */
export function nsfwProblems(id: string, nsfw: NsfwSpec, graphs: Readonly<Record<string, unknown>>): string[] {
  const wanted = nsfw.checker === 'none' ? undefined : CHECKER_GRAPH[nsfw.checker];
  const problems: string[] = [];
  if (wanted === 'safety_checker' && !graphs.safety_checker) {
    problems.push(
      `models.${id}.graphs.safety_checker: missing, so this model's images would not be checked for NSFW content; ` +
        `add the graph, or set models.${id}.nsfw to { "checker": "none" } to serve them unchecked`,
    );
  } else if (wanted && !graphs[wanted]) {
    problems.push(`models.${id}.graphs.${wanted}: missing, but models.${id}.nsfw.checker '${nsfw.checker}' runs that graph; add it, or pick the checker of the graph the model has`);
  }
  for (const role of Object.values(CHECKER_GRAPH)) {
    if (role === wanted || !graphs[role]) continue;
    problems.push(
      nsfw.checker === 'none'
        ? `models.${id}.nsfw.checker: 'none', but graphs.${role} is listed; remove one of the two`
        : `models.${id}.nsfw.checker: '${nsfw.checker}', but graphs.${role} is listed too and would never run; remove it, or set the checker that runs it`,
    );
  }
  return problems;
}
