/**
 * Fixtures of the NSFW checkers' contracts (src/models/contracts/nsfw.ts): the demo safety checker
 * under diffusers' axis names; a content filter with OnnxStack's contract (fp16 in and out, as its
 * optimised export ships; batch fixed at 1); a ViT-style classifier with optimum's contract and
 * its config.json / preprocessor_config.json; and that classifier with a manifest naming a label
 * its config lacks. The checkers judge the demo's NSFW signal (scripts/demo-models/nsfw-checkers.ts),
 * so `nsfwdemo` prompts are flagged and ordinary ones pass through each of them.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeModel } from '../../../src/onnx/proto.ts';
import { ROWS as CONTRACTS } from '../../../src/models/contracts/nsfw.ts';
import { buildContentFilter, buildNsfwClassifier, classifierConfigJson, classifierPreprocessorJson } from '../nsfw-checkers.ts';
import type { ExportRow } from './row.ts';
import { demoGraph, setDims, withHalfIo, writeFixtureManifest, writeGraph } from './kit.ts';

const contract = (id: string) => CONTRACTS.find((c) => c.id === id)!;

/** The classifier folder as optimum writes it: model.onnx, config.json, preprocessor_config.json. */
async function classifierFolder(dir: string): Promise<string> {
  const file = await writeGraph(dir, 'nsfw_classifier/model.onnx', buildNsfwClassifier());
  await writeFile(join(dir, 'nsfw_classifier/config.json'), classifierConfigJson());
  await writeFile(join(dir, 'nsfw_classifier/preprocessor_config.json'), classifierPreprocessorJson());
  return file;
}

export const ROWS: ExportRow[] = [
  {
    contract: contract('diffusers-safety-checker'),
    exercises: ['txt2img', 'nsfw'],
    async build(dir) {
      const m = await demoGraph('safety_checker/model.onnx');
      setDims(m, 'clip_input', ['batch', 'channels', 'height', 'width']);
      setDims(m, 'images', ['batch', 'height', 'width', 'channels']);
      setDims(m, 'has_nsfw_concepts', ['Greaterhas_nsfw_concepts_dim_0']);
      const file = await writeGraph(dir, 'safety_checker/model.onnx', m);
      return writeFixtureManifest(dir, (g) => (g.safety_checker = { path: file }));
    },
  },
  {
    contract: contract('onnxstack-content-filter'),
    exercises: ['txt2img', 'nsfw'],
    async build(dir) {
      const file = await writeGraph(dir, 'content_filter/model.onnx', withHalfIo(decodeModel(buildContentFilter())));
      return writeFixtureManifest(dir, (g, model) => {
        delete g.safety_checker;
        g.content_filter = { path: file };
        model.nsfw = { checker: 'content_filter', threshold: 0.02 };
      });
    },
  },
  {
    contract: contract('optimum-vit-nsfw-classifier'),
    exercises: ['txt2img', 'nsfw'],
    async build(dir) {
      const file = await classifierFolder(dir);
      return writeFixtureManifest(dir, (g, model) => {
        delete g.safety_checker;
        g.nsfw_classifier = { path: file };
        model.nsfw = { checker: 'classifier', labels: ['nsfw'], threshold: 0.5 };
      });
    },
  },
  {
    contract: contract('vit-classifier-unknown-label'),
    async build(dir) {
      const file = await classifierFolder(dir);
      return writeFixtureManifest(dir, (g, model) => {
        delete g.safety_checker;
        g.nsfw_classifier = { path: file };
        model.nsfw = { checker: 'classifier', labels: ['porn'] };
      });
    },
  },
];
