/**
 * An image classifier as NSFW checker: a Hugging Face image-classification model (a ViT fine-tune
 * such as Falconsai/nsfw_image_detection) exported by optimum. In pixel_values [B,3,H,W] (optimum's
 * ViTOnnxConfig: batch, channels, height and width free), out logits [B, labels] (optimum's
 * image-classification outputs: batch free, labels fixed). Beside the graph, as optimum copies them:
 * config.json (id2label: logit index → label) and preprocessor_config.json (size, resample,
 * mean, std; ViTImageProcessor stretches to 224×224 with mean = std = 0.5).
 *
 * The manifest names the labels that mean NSFW; an image is flagged when their softmax
 * probabilities add up to `threshold` or more. A named label the config lacks stops the start.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RawImage } from '../image/raw.ts';
import { GraphSession, GraphSessionError } from './graph-session.ts';
import { displayPath } from './manifest.ts';
import { batchSizes, checkerBatch, loadPreprocess, type ImagePreprocess } from './nsfw-preprocess.ts';
import type { NsfwSpec } from './nsfw-manifest.ts';
import { floatTensor, toFloat32 } from './tensors.ts';

export interface NsfwClassifier {
  readonly kind: 'classifier';
  readonly graph: GraphSession;
  /** Label of each logit (config.json id2label). */
  readonly labels: readonly string[];
  /** Logit indices of the labels that flag. */
  readonly flagged: readonly number[];
  readonly threshold: number;
  readonly preprocess: ImagePreprocess;
}

type ClassifierSpec = Extract<NsfwSpec, { checker: 'classifier' }>;

/** config.json's id2label as a list (index → label); throws naming the file when it has none usable. */
export async function readId2Label(dir: string): Promise<string[]> {
  const file = join(dir, 'config.json');
  let json: { id2label?: Record<string, unknown> };
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`${displayPath(file)}: ${code === 'ENOENT' ? 'missing; the classifier needs its config.json (id2label) beside the graph' : `unreadable (${(err as Error).message})`}`);
  }
  const entries = Object.entries(json.id2label ?? {});
  const labels: string[] = [];
  for (const [id, label] of entries) {
    const i = Number(id);
    if (!Number.isInteger(i) || i < 0 || i >= entries.length || typeof label !== 'string') throw new Error(`${displayPath(file)}: id2label entry ${JSON.stringify(id)}: ${JSON.stringify(label)} is not index → label`);
    labels[i] = label;
  }
  if (labels.length === 0) throw new Error(`${displayPath(file)}: no id2label; the classifier's labels are read from it`);
  return labels;
}

/** Reads the classifier's side files and checks the manifest's labels and the graph's logits against them. */
export async function loadNsfwClassifier(modelId: string, spec: ClassifierSpec, graph: GraphSession, dir: string): Promise<NsfwClassifier> {
  const field = `models.${modelId}.nsfw`;
  try {
    const labels = await readId2Label(dir);
    const flagged = spec.labels.map((label) => {
      const i = labels.indexOf(label);
      if (i < 0) throw new Error(`${field}.labels: '${label}' is not a label of ${displayPath(join(dir, 'config.json'))} (id2label: ${labels.join(', ')})`);
      return i;
    });
    const width = graph.output('logits').shape[1];
    if (typeof width === 'number' && width !== labels.length) {
      throw new Error(`${graph.path}: logits has ${width} classes, ${displayPath(join(dir, 'config.json'))} names ${labels.length}`);
    }
    const preprocess = await loadPreprocess(dir, spec.preprocess, undefined, `${field}.preprocess`);
    return { kind: 'classifier', graph, labels, flagged: [...new Set(flagged)], threshold: spec.threshold, preprocess };
  } catch (err) {
    if (err instanceof GraphSessionError) throw err;
    throw new GraphSessionError(`NSFW classifier of model '${modelId}': ${(err as Error).message}`);
  }
}

/** Per image, the summed softmax probability of the flagged labels. */
export async function nsfwProbabilities(images: readonly RawImage[], c: NsfwClassifier): Promise<number[]> {
  const { graph } = c;
  const probabilities: number[] = [];
  let done = 0;
  for (const size of batchSizes(images.length, graph.input('pixel_values').shape[0])) {
    const { pixels, dims } = await checkerBatch(images.slice(done, done + size), c.preprocess);
    const logits = toFloat32((await graph.run({ pixel_values: floatTensor(graph.floatType('pixel_values'), pixels, dims) }, ['logits'])).logits!);
    const width = c.labels.length;
    if (logits.length !== size * width) throw new Error(`${graph.path}: logits has ${logits.length} values for ${size} images of ${width} labels`);
    for (let i = 0; i < size; i++) {
      const row = logits.subarray(i * width, (i + 1) * width);
      const top = Math.max(...row);
      const exp = Array.from(row, (v) => Math.exp(v - top));
      const total = exp.reduce((a, b) => a + b, 0);
      probabilities.push(c.flagged.reduce((sum, k) => sum + exp[k]!, 0) / total);
    }
    done += size;
  }
  return probabilities;
}

/** One boolean per image: true when the NSFW labels are at least `threshold` likely. */
export async function classifierFlags(images: readonly RawImage[], c: NsfwClassifier): Promise<boolean[]> {
  return (await nsfwProbabilities(images, c)).map((p) => p >= c.threshold);
}
