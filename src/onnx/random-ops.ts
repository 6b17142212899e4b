/**
 * The ONNX ops that draw random numbers, and which of them a model uses: what makes a graph give
 * other outputs for the same inputs (a VAE encoder with latent_dist.sample() traced in).
 */
import { nodesOf } from './nodes.ts';
import type { ModelProto } from './proto.ts';

/** ONNX ops that draw random numbers. */
export const RANDOM_OPS: readonly string[] = ['RandomNormal', 'RandomNormalLike', 'RandomUniform', 'RandomUniformLike', 'Multinomial', 'Bernoulli'];

/** The random ops among a model's nodes (graph, subgraphs, model-local functions), as `op` or `domain:op`. */
export function randomOpsOf(model: ModelProto): string[] {
  const found = new Set<string>();
  for (const n of nodesOf(model)) {
    if (RANDOM_OPS.includes(n.opType)) found.add(n.domain && n.domain !== 'ai.onnx' ? `${n.domain}:${n.opType}` : n.opType);
  }
  return [...found].sort();
}
