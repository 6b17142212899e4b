/** One check's verdicts: each module's status and goals, and the code-wide counts. */

/** A module's verdict: right with its margins, right but short of one (weak), misread (wrong), or left to error correction (spared). */
export const Status = { Ok: 0, Weak: 1, Wrong: 2, Spared: 3 } as const;

/** What the check found. Modules include the quiet-zone ring. */
export interface ModuleCheck {
  readonly modules: number;
  /** Modules a decoder would misread. */
  readonly wrong: number;
  /** Modules read right but within the margins. */
  readonly weak: number;
  /** Wrong modules of finder, alignment, timing, format or version patterns, or of the quiet zone. */
  readonly wrongFunction: number;
  /** Wrong data modules as a share of all data modules. */
  readonly wrongDataShare: number;
  /** Wrong or weak data modules left to error correction (spareShare), counted in neither above. */
  readonly spared: number;
}

/** A module's goals and the code-wide figures of one check. */
export interface Pass {
  readonly status: Uint8Array;
  /** Luminance the read value and the core must reach (per module). */
  readonly goal: Float32Array;
  /** Luminance the core's mean must reach besides `goal` (per module; NaN where none: a finder's centre and light modules under `finderCentreShare`). */
  readonly coreGoal: Float32Array;
  /** Threshold the area share is counted against (per module). */
  readonly split: Float32Array;
  /** Luminance the far read must reach (per module; unused without the far read). */
  readonly farGoal: Float32Array;
  /** 1 where a module is weak by its far read alone: spare() does not count it (it picks the codewords the near checks fail). */
  readonly farOnly: Uint8Array;
  /** The code's mean dark share. */
  meanShare: number;
  check: ModuleCheck;
}

/** An empty pass for a grid of `cells` cells. */
export function newPass(cells: number): Pass {
  return {
    status: new Uint8Array(cells),
    goal: new Float32Array(cells),
    coreGoal: new Float32Array(cells).fill(Number.NaN),
    split: new Float32Array(cells),
    farGoal: new Float32Array(cells),
    farOnly: new Uint8Array(cells),
    meanShare: 0,
    check: { modules: cells, wrong: 0, weak: 0, wrongFunction: 0, wrongDataShare: 0, spared: 0 },
  };
}
