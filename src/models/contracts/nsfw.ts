/**
 * NSFW checkers (docs/models.md §2.3): SD's safety checker as diffusers exports it, OnnxStack's
 * content filter, and an image classifier exported by optimum with its label config.
 * Verified against:
 *   - diffusers scripts/convert_stable_diffusion_checkpoint_to_onnx.py: safety_checker/model.onnx,
 *     clip_input {batch, channels, height, width} and images {batch, height, width, channels} →
 *     out_images, has_nsfw_concepts (bool [batch]);
 *   - TensorStack-AI/OnnxStack (commit 9325321, 2025-12) OnnxStack.Converter/ContentFilter/models.py
 *     and config_content_filter.json (clip_input → concept_scores, traced from a [1,3,224,224]
 *     dummy with no dynamic axes; fp16 IO after its Olive optimisation) and
 *     OnnxStack.FeatureExtractor/Pipelines/ContentFilterPipeline.cs (explicit when any score > 0.02);
 *   - optimum exporters/onnx/model_configs.py ViTOnnxConfig (pixel_values {0: batch_size,
 *     1: num_channels, 2: height, 3: width} up to optimum 1.27; optimum-onnx since its dynamo
 *     change (2026-02) leaves the channel axis fixed: the pattern takes either) and the image-classification task's outputs
 *     (logits {0: batch_size}); Falconsai/nsfw_image_detection config.json (id2label
 *     {0: normal, 1: nsfw}) and preprocessor_config.json (ViTImageProcessor, 224×224, resample 2,
 *     mean = std = 0.5), read on huggingface.co, not run.
 */
import type { ExportContract } from './contract.ts';
import { FLOAT, graphMatches } from './match.ts';

const vitClassifier = (f: Parameters<ExportContract['matches']>[0]): boolean =>
  graphMatches(f, {
    inputs: [{ name: 'pixel_values', types: FLOAT, dims: ['batch_size', '*', '*', '*'] }],
    outputs: [{ name: 'logits', types: FLOAT, dims: ['batch_size', '*'] }],
  });

export const ROWS: ExportContract[] = [
  {
    id: 'diffusers-safety-checker',
    exporter: 'diffusers',
    graph: 'safety_checker/model.onnx (convert_stable_diffusion_checkpoint_to_onnx.py)',
    role: 'safety_checker',
    verdict: 'serves',
    how: 'nsfw.checker "safety_checker" (the default): clip_input CLIP-normalised 224×224 crop, images the same crop NHWC; has_nsfw_concepts read, out_images unused',
    matches: (f) =>
      graphMatches(f, {
        inputs: [
          { name: 'clip_input', types: FLOAT, dims: ['batch', '*', '*', '*'] },
          { name: 'images', types: FLOAT, dims: ['batch', '*', '*', '*'] },
        ],
        outputs: [
          { name: 'out_images', types: FLOAT },
          // No name from the script: torch's own (Greaterhas_nsfw_concepts_dim_0).
          { name: 'has_nsfw_concepts', types: ['bool'], dims: ['?'] },
        ],
      }),
  },
  {
    id: 'onnxstack-content-filter',
    exporter: 'OnnxStack/Amuse',
    graph: 'content_filter/model.onnx (OnnxStack.Converter/ContentFilter)',
    role: 'content_filter',
    verdict: 'serves',
    how: 'graphs.content_filter with nsfw { "checker": "content_filter", "threshold": 0.02 }: one image per run (batch fixed at 1), flagged when any of the 17 concept_scores is above the threshold (OnnxStack\'s rule and default); CLIP preprocessing unless nsfw.preprocess says otherwise; fp16 IO as OnnxStack ships it (its Olive pass may add CUDA-only fusions: refused on cpu and webgpu naming them, as the ort-optimizer rows)',
    matches: (f) =>
      graphMatches(f, {
        inputs: [{ name: 'clip_input', types: FLOAT, dims: [1, 3, 224, 224] }],
        outputs: [{ name: 'concept_scores', types: FLOAT, dims: [1, '*'] }],
        otherOutputs: () => false,
      }),
  },
  {
    id: 'optimum-vit-nsfw-classifier',
    exporter: 'optimum',
    graph: 'model.onnx + config.json + preprocessor_config.json (optimum-cli export onnx --task image-classification, e.g. Falconsai/nsfw_image_detection)',
    role: 'nsfw_classifier',
    verdict: 'serves',
    how: 'graphs.nsfw_classifier with nsfw { "checker": "classifier", "labels": ["nsfw"], "threshold": 0.5 }: labels looked up in config.json id2label, preprocessing from preprocessor_config.json, flagged when the softmax probabilities of the labels add up to the threshold',
    matches: vitClassifier,
  },
  {
    id: 'vit-classifier-unknown-label',
    exporter: 'optimum',
    graph: 'the same classifier, with nsfw.labels naming a label its config.json lacks',
    role: 'nsfw_classifier',
    verdict: 'refuses',
    how: 'name labels of config.json\'s id2label in models.<id>.nsfw.labels (the error lists them)',
    refusal: "is not a label of",
    // A manifest mistake, not a property of the graph: the graph's facts are the serving row's.
    matches: () => false,
  },
];
