/**
 * The export matrix (docs/models.md, "Export matrix"): each contract a real exporter writes for a
 * graph (or a tokenizer folder), and what the worker does with it: serves it, adapts it, or
 * refuses it at start with a message that names the fix.
 *
 * `qr-art models check` reads the facts of every graph a manifest names (graph-facts.ts) and
 * prints the contract each one matched. Each exporter family has its own file beside this one
 * (`ROWS: ExportContract[]`); index.ts gathers them. The fixtures that carry each contract are
 * written by scripts/demo-models/exports (one per contract id), and the matrix test runs them.
 */
import type { GraphRole } from '../../pipeline/manifest.ts';

export type Verdict = 'serves' | 'adapts' | 'refuses';

/** One input or output as the graph declares it. */
export interface IoFacts {
  readonly name: string;
  /** 'float32', 'float16', 'int64', 'uint8', 'bool', ... */
  readonly type: string;
  /** Fixed sizes as numbers, symbolic ones as their names (undefined: no name). */
  readonly dims: readonly (number | string | undefined)[];
}

/** What can be read from a graph file without running it. */
export interface GraphFacts {
  readonly role: GraphRole;
  readonly inputs: readonly IoFacts[];
  readonly outputs: readonly IoFacts[];
  /**
   * Every op type in the graph, its subgraphs and model-local functions, as `domain:op` for other
   * domains ('' and 'ai.onnx' as `op`); a MultiHeadAttention with packed inputs adds
   * `com.microsoft:MultiHeadAttention(packed QKV)` or `(packed KV)`.
   */
  readonly ops: ReadonlySet<string>;
}

/** What a tokenizer folder holds. */
export interface TokenizerFacts {
  readonly role: 'tokenizer';
  /** File names in the folder (one level). */
  readonly files: readonly string[];
}

export type ExportFacts = GraphFacts | TokenizerFacts;

export interface ExportContract {
  /** Stable id: the fixture row and the docs table use it, e.g. 'optimum-fp16-text-encoder'. */
  readonly id: string;
  /** Who writes it: 'optimum', 'diffusers', 'OnnxStack/Amuse', 'ONNX Runtime SD tools', 'Hugging Face', 'qr-art'. */
  readonly exporter: string;
  /** The graph (or folder) as the table names it. */
  readonly graph: string;
  readonly role: GraphRole | 'tokenizer';
  readonly verdict: Verdict;
  /** How it is served or adapted, or the fix its refusal names. */
  readonly how: string;
  /** For 'refuses': a fragment of the start-up error the worker gives. */
  readonly refusal?: string;
  /** True when these facts are this contract's (checked within the role only). */
  matches(facts: ExportFacts): boolean;
}
