/**
 * Rewrites a VAE encoder that samples inside its graph (latent_dist.sample() traced in: see
 * src/pipeline/vae-encoder-check.ts for who exports one) into one that outputs the
 * distribution's mean, so the same image always gives the same latents.
 *
 * diffusers' DiagonalGaussianDistribution.sample() is mean + std · ε with ε ~ N(0, 1), traced as
 * a RandomNormalLike (or RandomNormal with a fixed shape) node. Replacing ε by zeros leaves
 * mean + std · 0 = mean: the first half of what optimum 1.23+ writes as latent_parameters, and
 * what the worker takes from it. The draw becomes x − x (RandomNormalLike: zeros of x's shape
 * and type, at any opset) or ConstantOfShape (RandomNormal), cast to the node's dtype when it
 * names one. Only draws with mean 0 are rewritten; any other random op (uniform, Bernoulli,
 * multinomial), or one inside a subgraph or function, is refused: its zero is not a mean.
 * `qr-art models vae-mean` writes the result (src/cli/models.ts).
 */
import { node, tensor, type AttributeProto, type ModelProto, type NodeProto } from './proto.ts';
import { randomOpsOf } from './random-ops.ts';

export class VaeMeanError extends Error {
  override readonly name = 'VaeMeanError';
}

const attr = (n: NodeProto, name: string): AttributeProto | undefined => n.attribute.find((a) => a.name === name);

/** Replaces the encoder's normal draws by zeros in place; returns how many were replaced. */
export function replaceNormalDraws(model: ModelProto, file: string): number {
  const g = model.graph!;
  let replaced = 0;
  const nodes: NodeProto[] = [];
  for (const n of g.node) {
    if (n.opType !== 'RandomNormalLike' && n.opType !== 'RandomNormal') {
      nodes.push(n);
      continue;
    }
    const mean = attr(n, 'mean')?.f ?? 0;
    if (mean !== 0) throw new VaeMeanError(`${file}: node '${n.name}' (${n.opType}) draws with mean ${mean}; only draws around 0 can be replaced by the mean`);
    const dtype = attr(n, 'dtype');
    const out = n.output[0]!;
    const at = `vae-mean/${replaced}`;
    const zeros = dtype ? `${at}/zeros` : out;
    if (n.opType === 'RandomNormalLike') {
      nodes.push(node('Sub', [n.input[0]!, n.input[0]!], [zeros], {}, `${at}/zeros`));
    } else {
      const shape = (attr(n, 'shape')?.ints ?? []).map(Number);
      const name = `${at}/shape`;
      g.initializer.push(tensor(name, 'int64', [shape.length], shape));
      // ConstantOfShape's default value is a float32 0, RandomNormal's default dtype.
      nodes.push(node('ConstantOfShape', [name], [zeros], {}, `${at}/zeros`));
    }
    if (dtype) nodes.push(node('Cast', [zeros], [out], { to: Number(dtype.i) }, `${at}/cast`));
    replaced++;
  }
  g.node = nodes;
  const left = randomOpsOf(model);
  if (left.length > 0) throw new VaeMeanError(`${file}: random ops that cannot be replaced by a mean remain (${left.join(', ')}); re-export the encoder to output latent_parameters instead`);
  if (replaced === 0) throw new VaeMeanError(`${file}: the graph draws no random numbers; it needs no rewriting`);
  model.producerName = model.producerName ? `${model.producerName} + qr-art models vae-mean` : 'qr-art models vae-mean';
  return replaced;
}
