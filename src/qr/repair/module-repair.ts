/**
 * The repair of one module: the smallest core (growing from the starting one) whose clamp meets
 * the check's goals for it, clamped at the mildest level that does. The rules are set out in
 * index.ts.
 */
import { ModuleRole } from '../encode.ts';
import type { Footprint } from './footprint.ts';
import type { RepairFrame } from './frame.ts';
import type { Pass } from './pass.ts';

export class ModuleRepairer {
  private readonly frame: RepairFrame;

  constructor(frame: RepairFrame) {
    this.frame = frame;
  }

  /**
   * Repairs cell i toward `pass`'s goals: the smallest core (growing from the starting one)
   * whose clamp gives the read value its goal and the cell its area share, clamped at the
   * mildest level that does. Returns whether a pixel changed.
   */
  repair(i: number, pass: Pass): boolean {
    const { frame } = this;
    const { kernel, farKernel } = frame;
    const base = frame.bases[i]!;
    const isDark = frame.grid.dark[i] === 1;
    const goal = pass.goal[i]!;
    const need = Math.max(0, isDark ? frame.read(i) - goal : goal - frame.read(i));
    const far = frame.farRead(i);
    const farNeed = far === undefined ? 0 : Math.max(0, isDark ? far - pass.farGoal[i]! : pass.farGoal[i]! - far);
    const shareGoal = isDark ? pass.meanShare + frame.options.areaGap : pass.meanShare - frame.options.areaGap;
    const cores = frame.coresOf(i);
    // When no core meets both goals, the largest one, at the mildest level that meets the
    // read value's goal if any does: never darker (lighter) than some goal needs.
    let chosen = cores[cores.length - 1]!;
    let level: number | undefined;
    for (const core of cores) {
      const weights = this.weightsOf(i, core);
      const last = core === chosen;
      // The share does not depend on the level (the core ends past the split either way): the
      // cheaper test first.
      if (!last && !this.shareMet(i, core, weights, isDark, pass.split[i]!, shareGoal)) continue;
      let l = need > 0 && kernel ? this.levelFor(base, core, weights, isDark, need, goal, kernel) : goal;
      // The far read's goal too: the stronger of the two levels, and a larger core when this
      // one cannot move the far read enough at any level.
      if (l !== undefined && farNeed > 0 && farKernel) {
        const farLevel = this.levelFor(base, core, weights, isDark, farNeed, goal, farKernel);
        l = farLevel === undefined ? undefined : isDark ? Math.min(l, farLevel) : Math.max(l, farLevel);
      }
      if (last) level = l;
      if (l === undefined) continue;
      chosen = core;
      level = l;
      break;
    }
    level ??= isDark ? 0 : 255;
    // The core itself ends on the right side of the goal, whatever the blur would allow, and of
    // its own goal where it has one (a finder under finderCentreShare).
    level = isDark ? Math.min(level, goal) : Math.max(level, goal);
    const coreGoal = pass.coreGoal[i]!;
    if (!Number.isNaN(coreGoal)) level = isDark ? Math.min(level, coreGoal) : Math.max(level, coreGoal);
    return this.clamp(base, chosen, this.weightsOf(i, chosen), isDark, level);
  }

  /** Reused by weightsOf: one cell's weights at a time. */
  private scratch = new Float32Array(0);

  /**
   * A core's per-pixel weights for cell i: its feather times how much the pattern draws the
   * pixel in the cell's colour. Valid until the next call (a shared buffer).
   */
  private weightsOf(i: number, core: Footprint): Float32Array {
    const { shape, grid } = this.frame;
    // Function patterns are repaired in their standard shape: a styled eye (leaf, soft) that a
    // decoder misreads comes back as the plain squares detection looks for.
    if (!shape || grid.role[i] !== ModuleRole.Data) return core.weights;
    const n = core.weights.length;
    if (this.scratch.length < n) this.scratch = new Float32Array(n);
    const out = this.scratch;
    const at = i * grid.m * grid.m;
    const { weights, cells } = core;
    for (let k = 0; k < n; k++) out[k] = weights[k]! * shape[at + cells[k]!]!;
    return out;
  }

  private inCore = new Uint8Array(0);

  /** The cell's dark share once `core` is clamped past `split`. */
  private shareMet(i: number, core: Footprint, weights: Float32Array, isDark: boolean, split: number, shareGoal: number): boolean {
    const { m } = this.frame.grid;
    const { luma, region } = this.frame.plane;
    const base = this.frame.bases[i]!;
    let dark = 0;
    if (this.inCore.length < m * m) this.inCore = new Uint8Array(m * m);
    const inCore = this.inCore;
    inCore.fill(0);
    for (let k = 0; k < core.offsets.length; k++) {
      // Only pixels deep enough inside the core to survive the camera blur are sure to read in
      // the core's colour; the rest count as they are now.
      if (weights[k]! < 0.5 || !core.solid[k]) continue;
      inCore[core.cells[k]!] = 1;
      if (isDark) dark++;
    }
    const { width } = region;
    for (let y = 0, o = base; y < m; y++, o += width) {
      for (let x = 0; x < m; x++) if (!inCore[y * m + x] && luma[o + x]! <= split) dark++;
    }
    const share = dark / (m * m);
    return isDark ? share >= shareGoal : share <= shareGoal;
  }

  /**
   * The mildest clamp level of `core` that moves `kernel`'s read value by `need`, but never milder than
   * `goal` (the core ends past the goal anyway); undefined when even 0 / 255 does not.
   */
  private levelFor(base: number, core: Footprint, weights: Float32Array, isDark: boolean, need: number, goal: number, kernel: Footprint): number | undefined {
    const influence = this.influence(core, kernel);
    const { luma } = this.frame.plane;
    const gainAt = (level: number) => {
      let g = 0;
      for (let k = 0; k < core.offsets.length; k++) {
        const miss = isDark ? luma[base + core.offsets[k]!]! - level : level - luma[base + core.offsets[k]!]!;
        if (miss > 0) g += influence[k]! * weights[k]! * miss;
      }
      return g;
    };
    // Clamping at the goal is the usual answer; only when it is not enough search beyond it.
    if (gainAt(goal) >= need) return goal;
    const extreme = isDark ? 0 : 255;
    if (gainAt(extreme) < need) return undefined;
    // Bisection: the gain grows as the level moves toward black (white).
    let mild = goal;
    let strong = extreme;
    for (let iter = 0; iter < 9; iter++) {
      const mid = (mild + strong) / 2;
      if (gainAt(mid) >= need) strong = mid;
      else mild = mid;
    }
    return strong;
  }

  private readonly influences = new Map<Footprint, Map<Footprint, Float32Array>>();

  /** A read kernel's weight at each pixel of a core (0 outside the kernel). */
  private influence(core: Footprint, kernel: Footprint): Float32Array {
    let byCore = this.influences.get(kernel);
    if (!byCore) this.influences.set(kernel, (byCore = new Map()));
    let out = byCore.get(core);
    if (out) return out;
    const byOffset = new Map<number, number>();
    for (let k = 0; k < kernel.offsets.length; k++) byOffset.set(kernel.offsets[k]!, kernel.weights[k]!);
    out = Float32Array.from(core.offsets, (o) => byOffset.get(o) ?? 0);
    byCore.set(core, out);
    return out;
  }

  /** Clamps the core's pixels at `level` (each by its weight); returns whether a pixel changed. */
  private clamp(base: number, core: Footprint, weights: Float32Array, isDark: boolean, level: number): boolean {
    const { luma, touched } = this.frame.plane;
    let any = false;
    for (let k = 0; k < core.offsets.length; k++) {
      const p = base + core.offsets[k]!;
      const y = luma[p]!;
      const miss = isDark ? y - level : level - y;
      if (miss <= 0) continue;
      const step = miss * weights[k]!;
      if (step < 0.25) continue; // under a quarter level: neither visible nor readable
      luma[p] = isDark ? y - step : y + step;
      touched[p] = 1;
      any = true;
    }
    return any;
  }
}
