/**
 * Small declarative patterns for ExportContract.matches: which inputs and outputs a graph has,
 * with their dtypes and dims, as an exporter writes them. A pattern's dims: a number is a fixed
 * size, a string the exporter's symbolic name for that axis, '?' any symbolic (or unknown) axis,
 * '*' anything.
 */
import { TIMESTEP_TYPES } from '../../pipeline/roles.ts';
import type { ExportFacts, GraphFacts, IoFacts } from './contract.ts';

export type DimPattern = number | string;

export interface IoPattern {
  readonly name: string;
  readonly types: readonly string[];
  /** Undefined: any shape. */
  readonly dims?: readonly DimPattern[];
}

export interface GraphPattern {
  readonly inputs: readonly IoPattern[];
  readonly outputs: readonly IoPattern[];
  /** Inputs no pattern lists are allowed only when this says so (default: none). */
  readonly otherInputs?: (name: string) => boolean;
  /** Outputs no pattern lists are allowed (default) unless this says no. */
  readonly otherOutputs?: (name: string) => boolean;
}

export const F32 = ['float32'] as const;
export const F16 = ['float16'] as const;
export const FLOAT = ['float32', 'float16'] as const;
export const IDS = ['int32', 'int64'] as const;
/** Every timestep dtype the worker feeds (roles.ts). */
export const TIMESTEP: readonly string[] = TIMESTEP_TYPES;

export const isGraph = (f: ExportFacts): f is GraphFacts => f.role !== 'tokenizer';

function dimMatches(actual: number | string | undefined, wanted: DimPattern): boolean {
  if (wanted === '*') return true;
  if (wanted === '?') return typeof actual !== 'number';
  return actual === wanted;
}

export function ioMatches(io: IoFacts | undefined, p: IoPattern): boolean {
  if (!io || !p.types.includes(io.type)) return false;
  if (!p.dims) return true;
  return io.dims.length === p.dims.length && p.dims.every((d, i) => dimMatches(io.dims[i], d));
}

/** True when every pattern is matched by the graph value of its name and no unlisted input is there (unless allowed). */
export function graphMatches(facts: ExportFacts, p: GraphPattern): boolean {
  if (!isGraph(facts)) return false;
  const byName = (list: readonly IoFacts[]) => new Map(list.map((v) => [v.name, v]));
  const ins = byName(facts.inputs);
  const outs = byName(facts.outputs);
  if (!p.inputs.every((ip) => ioMatches(ins.get(ip.name), ip))) return false;
  if (!p.outputs.every((op) => ioMatches(outs.get(op.name), op))) return false;
  const listedIn = new Set(p.inputs.map((i) => i.name));
  if (facts.inputs.some((i) => !listedIn.has(i.name) && !(p.otherInputs?.(i.name) ?? false))) return false;
  const listedOut = new Set(p.outputs.map((o) => o.name));
  if (p.otherOutputs && facts.outputs.some((o) => !listedOut.has(o.name) && !p.otherOutputs!(o.name))) return false;
  return true;
}

export const hasInput = (facts: ExportFacts, name: string): boolean => isGraph(facts) && facts.inputs.some((i) => i.name === name);
