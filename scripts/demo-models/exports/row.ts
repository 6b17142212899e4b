/**
 * One fixture of the export matrix: the graphs (or tokenizer folder) that carry exactly one
 * exporter contract of src/models/contracts (names, dtypes, ranks, optional inputs, baked-in
 * randomness), so the matrix test can run it through the real pipeline.
 *
 * Each exporter family has its own file beside this one exporting `ROWS: ExportRow[]`;
 * index.ts gathers them. The matrix test builds every row into a temporary folder and then
 * generates through it (serves, adapts) or starts the worker on it and checks the message (refuses).
 */
import type { ExportContract } from '../../../src/models/contracts/contract.ts';

/** What a serving row's test runs through it, beyond plain txt2img. */
export type Exercise = 'txt2img' | 'refine' | 'face' | 'outpaint' | 'nsfw' | 'caption';

export interface ExportRow {
  readonly contract: ExportContract;
  /** For 'serves' and 'adapts': what the matrix test runs through it (default ['txt2img']). */
  readonly exercises?: readonly Exercise[];
  /**
   * Writes the fixture graphs (and tokenizer files) into `dir`, plus a manifest that uses them
   * for the roles the row is about and the demo graphs for every other role; returns the
   * manifest's path.
   */
  build(dir: string): Promise<string>;
}
