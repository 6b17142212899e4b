/**
 * The module check: every module's thresholds (the binarizers a decoder may use, at every scale
 * the capture family photographs the code at), its goals, and its verdict (ok, weak, wrong,
 * spared), into a Pass. The rules are set out in index.ts.
 */
import { ModuleRole } from '../encode.ts';
import { flatDarkLimit, HALF_BLOCK_PHASES, HARSH_EXPOSURE, hybridThresholdMaps, type Exposure } from '../hybrid-threshold.ts';
import type { RepairFrame } from './frame.ts';
import { QUIET } from './grid.ts';
import { Status, type Pass } from './pass.ts';
import { sparedCells } from './spare.ts';
import { BINARIZER_WINDOW } from './windows.ts';

/** The exposures the hybrid binarizer's thresholds are taken under: a phone's harsh end, and as drawn. */
const EXPOSURES: readonly Exposure[] = [HARSH_EXPOSURE, { contrast: 1, brightness: 0 }];

export class ModuleChecker {
  private readonly frame: RepairFrame;
  /** Read value of each cell at the last check. */
  private readonly values: Float32Array;
  /** 1 for the cells of codewords left to error correction (spare). */
  private spared: Uint8Array;

  constructor(frame: RepairFrame) {
    this.frame = frame;
    const cells = frame.grid.side ** 2;
    this.values = new Float32Array(cells);
    this.spared = new Uint8Array(cells);
  }

  /** Leaves codewords to the decoders' error correction, chosen from `pass` (sparedCells); they count as spared from the next check on. */
  spare(pass: Pass, share: number): void {
    this.spared = sparedCells(this.frame.geometry, this.frame.grid.side, pass, share);
  }

  /**
   * ZXing's hybrid binarizer's threshold at every cell's centre, once per scale a decoder may
   * read the code at (the binarizer windows' scales), block-grid phase (whole and half blocks:
   * whether a block is flat depends on where the grid falls) and exposure (EXPOSURES)
   * (hybrid-threshold.ts). NaN where a decoder would binarize globally.
   */
  private hybridThresholds(): Float32Array[] {
    const { frame } = this;
    const cells = frame.grid.side ** 2;
    const centres = new Float32Array(2 * cells);
    for (let i = 0; i < cells; i++) [centres[2 * i], centres[2 * i + 1]] = frame.centre(i);
    const { plane } = frame;
    const { width, height } = plane.region;
    const means = { width, height, mean: (ax: number, ay: number, bx: number, by: number) => plane.rectMean(ax, ay, bx, by) };
    const out: Float32Array[] = [];
    for (const w of frame.windows) out.push(...hybridThresholdMaps(means, w / BINARIZER_WINDOW, centres, EXPOSURES, HALF_BLOCK_PHASES));
    return out;
  }

  /** Share of cell i's pixels at or below `split`. */
  private darkShare(i: number, split: number): number {
    const { m } = this.frame.grid;
    const { luma, region } = this.frame.plane;
    const { width } = region;
    let n = 0;
    for (let y = 0, o = this.frame.bases[i]!; y < m; y++, o += width) for (let x = 0; x < m; x++) if (luma[o + x]! <= split) n++;
    return n / (m * m);
  }

  /** Checks every module into `pass`. */
  check(pass: Pass): void {
    const { frame } = this;
    const { plane } = frame;
    const { side, m, dark, role } = frame.grid;
    const { margin, contrast, areaGap, farWindow, farMargin } = frame.options;
    const cells = side * side;
    plane.updateSums();
    const { values } = this;
    for (let i = 0; i < cells; i++) values[i] = frame.read(i);
    // Thresholds first, then the code's mean dark share (OpenCV's reference), then the verdicts.
    const lows = new Float32Array(cells);
    const highs = new Float32Array(cells);
    const shares = new Float32Array(cells);
    let shareSum = 0;
    let shareCount = 0;
    const hybrid = this.hybridThresholds();
    const quietLevel = this.quietLevel();
    // A finder's 3x3 centre at most finderCentreShare of the quiet zone's light, but never asked
    // darker than the code's darkest dark module already is (a palette's own black: a plain code
    // in navy on cream stays as drawn); its light modules as light as the quiet zone.
    const { finderCentreShare } = frame.options;
    const finderCentreGoal = finderCentreShare > 0 ? Math.max(finderCentreShare * quietLevel, this.darkestDark()) : Number.NaN;
    const finderLightGoal = finderCentreShare > 0 ? quietLevel : Number.NaN;
    // A finder's dark modules are a wide flat run: dark only while darker than half the light
    // around them, as a phone sees it (hybrid-threshold.ts, flatDarkLimit). An alignment
    // pattern's are held to the same: its centre, one module between light rings, blurs first.
    const finderDark = flatDarkLimit(quietLevel, plane.rectMean(0, 0, plane.region.width, plane.region.height));
    for (let i = 0; i < cells; i++) {
      const [cx, cy] = frame.centre(i);
      let lo = 255;
      let hi = 0;
      for (const w of frame.windows) {
        const t = plane.boxMean(cx, cy, w);
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
      // OpenCV's split is the local means'; the centre is read against ZXing's hybrid
      // thresholds too.
      pass.split[i] = (lo + hi) / 2;
      // ZBar's (its 3-level bias left out: the margins below are wider).
      for (const w of frame.zbarWindows) {
        const t = plane.boxMean(cx, cy, w);
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
      for (const t of hybrid) {
        const v = t[i]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      if ((role[i] === ModuleRole.Finder || role[i] === ModuleRole.Alignment) && dark[i] === 1) lo = Math.min(lo, finderDark);
      // The far read's goal: the mean of the farWindow box, less (plus) farMargin, but never
      // more than half what the code drawn plain clears there (a plain code printed at half
      // contrast still passes).
      if (frame.farClearance) {
        const far = plane.boxMean(cx, cy, farWindow * m);
        const clear = Math.min(farMargin, Math.max(0, frame.farClearance[i]! / 2));
        pass.farGoal[i] = dark[i] === 1 ? far - clear : far + clear;
      }
      lows[i] = lo;
      highs[i] = hi;
      shares[i] = this.darkShare(i, pass.split[i]!);
      if (role[i] !== QUIET) {
        shareSum += shares[i]!;
        shareCount++;
      }
    }
    const meanShare = (pass.meanShare = shareSum / shareCount);
    let wrong = 0;
    let weak = 0;
    let spared = 0;
    let wrongFunction = 0;
    let data = 0;
    let wrongData = 0;
    for (let i = 0; i < cells; i++) {
      if (role[i] === ModuleRole.Data) data++;
      const r = Math.floor(i / side);
      const c = i - r * side;
      const lo = lows[i]!;
      const hi = highs[i]!;
      const isDark = dark[i] === 1;
      const own = this.neighbourhood(r, c, isDark);
      const other = this.neighbourhood(r, c, !isDark);
      // Beyond the threshold by the margin (at most half the way to black or white), but never
      // beyond the most extreme module of the same colour around: a flat region is as dark (light)
      // as it gets, and binarizers read a flat block as one colour.
      let goal = isDark ? Math.max(lo - Math.min(margin, lo / 2), Math.min(own.extreme, lo)) : Math.min(hi + Math.min(margin, (255 - hi) / 2), Math.max(own.extreme, hi));
      // Contrast with the neighbours of the other colour, as they will be once they clear the
      // threshold themselves (the quiet zone too: OpenCV finds the code's outline from it).
      if (other.mean !== undefined) {
        goal = isDark ? Math.min(goal, Math.max(other.mean, hi + margin) - contrast) : Math.max(goal, Math.min(other.mean, lo - margin) + contrast);
      }
      // A finder's light rings as light as the quiet zone around the code, less the margin: a
      // detector that thresholds the finder against its surroundings (OpenCV) otherwise reads a
      // light ring that is only locally light as dark, and the 1:1:3:1:1 runs vanish (measured: a
      // repaired version-10 code OpenCV read in 4 of 12 captures, 11 of 12 with this goal).
      if (role[i] === ModuleRole.Finder && !isDark) goal = Math.max(goal, quietLevel - margin);
      goal = Math.min(255, Math.max(0, goal));
      pass.goal[i] = goal;
      // Finders nearer a plain code's contrast (finderCentreShare): the cores' own goals, apart
      // from the read value's, which the blur from the other colour may keep from getting that far.
      const coreGoal = role[i] === ModuleRole.Finder ? (isDark ? (frame.grid.finderCentre[i] ? finderCentreGoal : Number.NaN) : finderLightGoal) : Number.NaN;
      pass.coreGoal[i] = coreGoal;
      const core = frame.coreMean(i);
      const worst = isDark ? Math.max(values[i]!, core) : Math.min(values[i]!, core);
      const share = shares[i]!;
      // Misread: on the wrong side of the threshold (a module level with the threshold in a
      // flat region reads as its region does: not counted), or of OpenCV's mean share.
      const misread = isDark ? worst > lo + 1 || share <= meanShare : worst < hi - 1 || share >= meanShare;
      const coreShort = !Number.isNaN(coreGoal) && (isDark ? core > coreGoal + 0.5 : core < coreGoal - 0.5);
      const short = coreShort || (isDark ? worst > goal + 0.5 || share < meanShare + areaGap : worst < goal - 0.5 || share > meanShare - areaGap);
      // The far read short of its goal (wrong side of its threshold included) is weak, not
      // wrong: it is repaired whenever the module check or the verdict calls for a repair, but
      // never calls for one itself nor for a stronger pass. Counting it wrong changed neither
      // the referees' reads nor the SSIM over 150 bench images (docs/scan-repair.md).
      const far = frame.farRead(i);
      const farShort = far !== undefined && (isDark ? far > pass.farGoal[i]! + 0.5 : far < pass.farGoal[i]! - 0.5);
      let s: number = misread ? Status.Wrong : short || farShort ? Status.Weak : Status.Ok;
      pass.farOnly[i] = s === Status.Weak && !short ? 1 : 0;
      if (s !== Status.Ok && this.spared[i]) s = Status.Spared;
      pass.status[i] = s;
      if (s === Status.Spared) spared++;
      else if (s === Status.Wrong) {
        wrong++;
        if (role[i] === ModuleRole.Data) wrongData++;
        else wrongFunction++;
      } else if (s === Status.Weak) weak++;
    }
    this.evenQuietZone(pass, values);
    pass.check = { modules: cells, wrong, weak, wrongFunction, wrongDataShare: data > 0 ? wrongData / data : 0, spared };
  }

  /** Lowest read value of a dark module (at the last check). */
  private darkestDark(): number {
    const { dark } = this.frame.grid;
    let darkest = 255;
    for (let i = 0; i < dark.length; i++) if (dark[i] === 1 && this.values[i]! < darkest) darkest = this.values[i]!;
    return darkest;
  }

  /** Median read value of the quiet-zone ring (at the last check). */
  private quietLevel(): number {
    const { role } = this.frame.grid;
    const levels: number[] = [];
    for (let i = 0; i < role.length; i++) if (role[i] === QUIET) levels.push(this.values[i]!);
    levels.sort((a, b) => a - b);
    return levels[Math.floor(levels.length / 2)] ?? 255;
  }

  /**
   * The quiet zone is lifted as a band, not module by module, so a repair there reads as a
   * lighter margin rather than a row of light tiles: when many of its cells fail (a tenth or
   * more), every quiet cell is brought to the band's goal (the 90th percentile of the failing
   * cells' goals); when a few do, the quiet cells within three modules of each take its goal.
   */
  private evenQuietZone(pass: Pass, values: Float32Array): void {
    const { side, role } = this.frame.grid;
    const cells = side * side;
    const failing: number[] = [];
    let quiet = 0;
    for (let i = 0; i < cells; i++) {
      if (role[i] !== QUIET) continue;
      quiet++;
      if (pass.status[i] !== Status.Ok) failing.push(i);
    }
    if (failing.length === 0) return;
    const raise = (i: number, goal: number) => {
      if (role[i] !== QUIET || pass.goal[i]! >= goal) return;
      pass.goal[i] = goal;
      if (pass.status[i] === Status.Ok && values[i]! < goal - 0.5) pass.status[i] = Status.Weak;
    };
    if (failing.length >= quiet / 10) {
      const goals = failing.map((i) => pass.goal[i]!).sort((a, b) => a - b);
      const band = goals[Math.floor(0.9 * (goals.length - 1))]!;
      for (let i = 0; i < cells; i++) raise(i, band);
      return;
    }
    for (const i of failing) {
      const goal = pass.goal[i]!;
      const r = Math.floor(i / side);
      const c = i - r * side;
      for (let y = Math.max(0, r - 3); y <= Math.min(side - 1, r + 3); y++) for (let x = Math.max(0, c - 3); x <= Math.min(side - 1, c + 3); x++) raise(y * side + x, goal);
    }
  }

  /**
   * The modules of one colour within two modules of (r, c): their mean read value (undefined
   * when there are none besides (r, c) itself) and the most extreme one (darkest of dark, lightest
   * of light), (r, c) included when it has that colour.
   */
  private neighbourhood(r: number, c: number, ofDark: boolean): { mean: number | undefined; extreme: number } {
    const { side, dark } = this.frame.grid;
    const want = ofDark ? 1 : 0;
    let sum = 0;
    let n = 0;
    let extreme = ofDark ? 255 : 0;
    for (let y = Math.max(0, r - 2); y <= Math.min(side - 1, r + 2); y++) {
      for (let x = Math.max(0, c - 2); x <= Math.min(side - 1, c + 2); x++) {
        const j = y * side + x;
        if (dark[j] !== want) continue;
        const v = this.values[j]!;
        if (ofDark ? v < extreme : v > extreme) extreme = v;
        if (y === r && x === c) continue;
        sum += v;
        n++;
      }
    }
    return { mean: n > 0 ? sum / n : undefined, extreme };
  }

}
