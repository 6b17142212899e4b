/**
 * Every node of a model: the main graph's, those of subgraphs held in attributes (If, Loop, Scan
 * bodies) at any depth, and those of model-local functions. What a check of "does this graph use
 * op X" must visit, or an op hidden in a branch or a function escapes it.
 */
import type { ModelProto, NodeProto } from './proto.ts';

function* inGraph(nodes: readonly NodeProto[]): Generator<NodeProto> {
  for (const n of nodes) {
    yield n;
    for (const a of n.attribute) for (const g of [...(a.g ? [a.g] : []), ...a.graphs]) yield* inGraph(g.node);
  }
}

export function* nodesOf(model: ModelProto): Generator<NodeProto> {
  if (model.graph) yield* inGraph(model.graph.node);
  for (const f of model.functions) yield* inGraph(f.node);
}
