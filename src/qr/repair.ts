/**
 * Per-module scan repair: which modules of an artistic QR image a decoder would read wrong,
 * and the smallest luminance change that makes them right.
 *
 * What a module must satisfy (design notes §6 and the decoders the referees run):
 *
 *   threshold   ZXing and jsQR binarize with 8x8 blocks and a threshold averaged over the 5x5
 *               neighbouring blocks; OpenCV with a Gaussian-weighted local mean. Both are local
 *               means. Here: the mean luminance over a 40-pixel square (5 blocks of 8) centred on
 *               the module, at every scale a decoder may see the code at (native pixels, and the
 *               code spanning ~400, ~300, ~200 and ~150 px, the capture family's range, never less
 *               than MIN_MODULE_PX per module); and, at the same scales, ZXing's hybrid
 *               binarizer's own threshold under a phone's harsh exposure and as drawn, with its
 *               block grid at four phases, whose flat-block rule reads a flat mid-grey run beside
 *               white as light (hybrid-threshold.ts). A finder's dark modules, a wide flat run
 *               whatever the grid, must also be darker than half the quiet zone's light as a
 *               phone's harsh exposure sees both (flatDarkLimit), and so must an alignment
 *               pattern's (Java ZXing's alignment search loses its blurred one-module centre
 *               first). ZBar's threshold is a plain mean too, over a far wider box (about
 *               5 to 20 modules: zbarWindowsFor). `lo` and `hi` are the lowest and highest of
 *               them all.
 *   centre      ZXing, jsQR and ZBar read the pixel at the module centre. Two values must be on
 *               the right side (dark: below `lo`; light: above `hi`): the mean of the central
 *               core (a disk of `coreRatio` of the module; the "central disk about a
 *               third of the module"), and the read value: the luminance at the centre as a phone
 *               sees it, Gaussian-blurred by a camera blur of ~1 px when the code spans ~220 px
 *               (in this image's pixels). A dot that is right at full resolution but melts into
 *               its surroundings in a photo is wrong.
 *   area        OpenCV reads a module as the share of its whole cell binarized dark, compared with
 *               the mean share over the code. A dark module's dark share must exceed that mean by
 *               `areaGap`, a light module's stay below it by `areaGap`; a repaired core counts only
 *               as far as it lies deeper than the camera blur inside its edge.
 *   margin      the centre values must clear the threshold by `margin` (capped at half the way to
 *               black or white, and at the most extreme module of the same colour around: a flat
 *               region reads as one colour and is not asked for more than it has) and differ from
 *               the neighbouring modules of the other colour by `contrast` (after a phone's
 *               contrast loss a binarizer reads a block with less than ~24 levels of range as
 *               flat). A finder's light modules must also be as light as the quiet zone (less
 *               the margin). Wrong: misread; weak: right but short of a margin.
 *
 * The repair of a failing module clamps a core of it: dark modules' core pixels brighter than a
 * level L are brought down to L (darker pixels stay), light ones the other way, with L the mildest
 * level that gives the read value its goal and never short of the goal itself (so the whole core
 * ends on the right side). The core starts as a disk of `coreRatio` of the module for data modules,
 * the whole module for finder modules (seamless rings: the 1:1:3:1:1 runs detection looks for, and
 * the contours OpenCV's detector follows) and a square of `patternRatio` for alignment, timing,
 * format and version modules (their standard shape: bars OpenCV counts timing transitions on),
 * and grows by tenths of the module, up to the whole module, only while the goal or the area
 * share cannot be met. A feather of an eighth of the module softens its edge. With the control
 * image (geometry.control) a data module's core keeps to the requested pattern's shape: only pixels
 * the pattern draws in the module's colour change. The quiet zone is repaired whole and as a band
 * (see evenQuietZone). Colour is kept: darkening scales R, G, B together (hue and saturation
 * kept), lightening scales them up as far as the brightest channel allows and then mixes toward
 * white (hue kept). Thresholds and read values depend on the neighbours, so check -> repair runs a
 * few rounds.
 *
 * With `spareShare`, some failing data modules are not repaired at all: whole codewords, up to a
 * share of what each Reed-Solomon block corrects (codewords.ts), are left for the decoders' error
 * correction, the ones with the most failing modules first.
 */
import type { RawImage } from '../image/raw.ts';
import { rawImage } from '../image/raw.ts';
import { FRAME_PAD, MIN_MODULE_PX } from './capture-family.ts';
import { codewordMap } from './codewords.ts';
import { flatDarkLimit, HALF_BLOCK_PHASES, HARSH_EXPOSURE, hybridThresholdMaps, type Exposure } from './hybrid-threshold.ts';
import { alignmentCentres, ModuleRole, type QrMatrix } from './encode.ts';
import type { QrLayout } from './layout.ts';

/** The code as drawn in an image: its modules and where they are, in that image's pixels. */
export interface QrGeometry {
  readonly matrix: QrMatrix;
  readonly layout: QrLayout;
  /**
   * The control image the code was drawn as (1 channel, the image's size, dark 0, light 255):
   * repairs then follow the requested pattern's shapes. Optional; without it cores are plain
   * disks and squares.
   */
  readonly control?: RawImage;
}

export interface RepairOptions {
  /** Starting diameter of the checked and repaired disk of a data module, as a fraction of its side (default 0.5). */
  readonly coreRatio?: number;
  /** Starting side of the repaired square of a finder, alignment, timing, format or version module (default 0.8). */
  readonly patternRatio?: number;
  /** Luminance levels (0..255) the centre values must clear the threshold by (default 8). */
  readonly margin?: number;
  /** Luminance levels a module's read value must differ from its neighbours of the other colour by (default 72). */
  readonly contrast?: number;
  /** How far a module's dark share must be beyond the code's mean dark share (default 0.3). */
  readonly areaGap?: number;
  /** Check -> repair rounds at most (default 4), then as many again while a module is wrong; 0 only checks. */
  readonly rounds?: number;
  /** Code sides in px (without quiet zone) at which decoders binarize, besides the native pixels (default 400, 300, 200, 150: the capture family's range; never under MIN_MODULE_PX per module). */
  readonly decodeSides?: readonly number[];
  /**
   * Side in px the code with its quiet zone spans in the photo the read value models (default 220:
   * a phone held a little far; the repair's later passes go down to the capture family's 120). A
   * dense code is modelled no farther than MIN_MODULE_PX per module, as the family captures it.
   */
  readonly captureSide?: number;
  /** Camera blur (Gaussian sigma) in photo pixels (default 1.0); 0: the read value is the core's mean. */
  readonly captureBlur?: number;
  /**
   * Share (0..1) of each Reed-Solomon block's correctable codewords left to the decoders' error
   * correction (default 0: every failing module is repaired). The codewords with the most failing
   * data modules are left as the art drew them, chosen once, at the first check.
   */
  readonly spareShare?: number;
  /**
   * Side in px the code with its quiet zone spans in a far photo, the far read's model (default
   * 140). Unlike captureSide it is not lifted for dense codes: a version-10 code there has about
   * 2.3 px per module, where phones still read plain codes but not art whose modules are dots.
   */
  readonly farSide?: number;
  /** Camera blur (Gaussian sigma) in far-photo pixels (default 1.0); 0 leaves the far read out. */
  readonly farBlur?: number;
  /** Side in modules of the far read's threshold window (default 15: ZXing's and ZBar's windows are 14-28 modules there). */
  readonly farWindow?: number;
  /** Luminance levels the far read must clear its threshold by (default 10). */
  readonly farMargin?: number;
}

export const DEFAULT_REPAIR_OPTIONS = Object.freeze({
  coreRatio: 0.5,
  patternRatio: 0.8,
  margin: 8,
  contrast: 72,
  areaGap: 0.3,
  rounds: 4,
  decodeSides: Object.freeze([400, 300, 200, 150]) as readonly number[],
  captureSide: 220,
  captureBlur: 1.0,
  spareShare: 0,
  farSide: 140,
  farBlur: 1.0,
  farWindow: 15,
  farMargin: 10,
});

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

export interface RepairResult {
  /** A new image (the input is never modified); the input itself when nothing changed. */
  readonly image: RawImage;
  /** Modules whose pixels were changed. */
  readonly changedModules: number;
  /** Pixels whose value changed. */
  readonly changedPixels: number;
  /** The check before the repair. */
  readonly before: ModuleCheck;
  /** The check of the returned image. */
  readonly after: ModuleCheck;
  /** Per module (matrix rows and columns extended by the quiet zone, row-major), 1 where changed. */
  readonly changedMask: Uint8Array;
}

/** Role of a quiet-zone module in the internal role table (QR roles are 0..5). */
const QUIET = 6;
/** The 40-pixel binarizer window: 5x5 blocks of 8 px. */
const BINARIZER_WINDOW = 40;
/** The exposures the hybrid binarizer's thresholds are taken under: a phone's harsh end, and as drawn. */
const EXPOSURES: readonly Exposure[] = [HARSH_EXPOSURE, { contrast: 1, brightness: 0 }];
/** Modules around the bottom-right alignment pattern's centre whose codewords are never spared. */
const ALIGNMENT_REACH = 5;
/** Core growth step, as a fraction of the module. */
const GROWTH = 0.1;

const Status = { Ok: 0, Weak: 1, Wrong: 2, Spared: 3 } as const;

// BT.601 in 10-bit fixed point, the weights of src/image/luma.ts (and of ZXing).
const WR = 306;
const WG = 601;
const WB = 117;

type Resolved = { readonly [K in keyof typeof DEFAULT_REPAIR_OPTIONS]: (typeof DEFAULT_REPAIR_OPTIONS)[K] extends readonly number[] ? readonly number[] : number };

function resolve(options: RepairOptions): Resolved {
  const r = { ...DEFAULT_REPAIR_OPTIONS, ...options };
  const check = (ok: boolean, what: string) => {
    if (!ok) throw new RangeError(what);
  };
  check(r.coreRatio > 0 && r.coreRatio <= 1, `coreRatio must be in (0, 1], got ${r.coreRatio}`);
  check(r.patternRatio > 0 && r.patternRatio <= 1, `patternRatio must be in (0, 1], got ${r.patternRatio}`);
  check(r.margin >= 0 && r.margin < 128, `margin must be in [0, 128), got ${r.margin}`);
  check(r.contrast >= 0 && r.contrast <= 255, `contrast must be in [0, 255], got ${r.contrast}`);
  check(r.areaGap >= 0 && r.areaGap < 0.5, `areaGap must be in [0, 0.5), got ${r.areaGap}`);
  check(Number.isInteger(r.rounds) && r.rounds >= 0, `rounds must be a non-negative integer, got ${r.rounds}`);
  check(r.captureSide > 0, `captureSide must be positive, got ${r.captureSide}`);
  check(r.captureBlur >= 0, `captureBlur must be non-negative, got ${r.captureBlur}`);
  check(r.decodeSides.every((s) => s > 0), 'decodeSides must be positive');
  check(r.spareShare >= 0 && r.spareShare <= 1, `spareShare must be in [0, 1], got ${r.spareShare}`);
  check(r.farSide > 0, `farSide must be positive, got ${r.farSide}`);
  check(r.farBlur >= 0, `farBlur must be non-negative, got ${r.farBlur}`);
  check(r.farWindow >= 1, `farWindow must be at least 1 module, got ${r.farWindow}`);
  check(r.farMargin >= 0 && r.farMargin < 128, `farMargin must be in [0, 128), got ${r.farMargin}`);
  return r;
}

/** Pixels around a module, the same for every module (modules are whole pixels): offsets from its top-left. */
interface Footprint {
  /** (dy * stride + dx) in the region buffer. */
  readonly offsets: Int32Array;
  /** (dy * m + dx): the pixel's index within the module, for per-module shape masks. */
  readonly cells: Int32Array;
  readonly weights: Float32Array;
  /** The first `inner` entries have weight 1 (the core proper); the rest is the feather. */
  readonly inner: number;
  /**
   * 1 for pixels at least the camera blur inside the core's edge: what still reads in the
   * core's colour once a phone's blur has eaten into its rim (the area share counts these).
   */
  readonly solid: Uint8Array;
}

/**
 * A core: pixels of a module of side `m` within `ratio` of its half side from the centre
 * (Euclidean for a disk, Chebyshev for a square) at weight 1, then a feather of m / 8 falling
 * to 0, cut at the module's edge. Always holds the central pixel(s).
 */
function coreOf(m: number, stride: number, ratio: number, square: boolean, blur: number): Footprint {
  const half = m / 2;
  const radius = Math.max(ratio * half, 0.75);
  const feather = Math.max(1, m / 8);
  const inner: number[][] = [];
  const soft: number[][] = [];
  for (let y = 0; y < m; y++) {
    for (let x = 0; x < m; x++) {
      const dx = x + 0.5 - half;
      const dy = y + 0.5 - half;
      const d = square ? Math.max(Math.abs(dx), Math.abs(dy)) : Math.sqrt(dx * dx + dy * dy);
      const solid = d <= radius - blur ? 1 : 0;
      if (d <= radius) inner.push([y * stride + x, y * m + x, 1, solid]);
      else if (d < radius + feather) {
        const t = 1 - (d - radius) / feather;
        soft.push([y * stride + x, y * m + x, t * t * (3 - 2 * t), 0]);
      }
    }
  }
  const all = [...inner, ...soft];
  return {
    offsets: Int32Array.from(all, (e) => e[0]!),
    cells: Int32Array.from(all, (e) => e[1]!),
    weights: Float32Array.from(all, (e) => e[2]!),
    inner: inner.length,
    solid: Uint8Array.from(all, (e) => e[3]!),
  };
}

/**
 * The far read's blur in modules for a code `side` modules across (quiet zone included): each
 * pixel of the far photo averages a square side / farSide modules wide (a box's sigma is its
 * width over sqrt 12), then the camera blurs by farBlur of those pixels. About 0.45 modules for
 * version 10 and 0.22 for version 2 at the default 140 px; 0 when farBlur is 0.
 */
export function farReadSigma(options: Pick<Resolved, 'farSide' | 'farBlur'>, side: number): number {
  if (options.farBlur === 0) return 0;
  return (Math.sqrt(1 / 12 + options.farBlur ** 2) * side) / options.farSide;
}

/** Gaussian weights (sum 1) within 2.5 sigma of a module's centre, as offsets from its top-left pixel. */
function readKernel(m: number, stride: number, sigma: number): Footprint {
  const half = m / 2;
  const reach = Math.ceil(2.5 * sigma + half);
  const entries: number[][] = [];
  for (let y = -reach; y < m + reach; y++) {
    for (let x = -reach; x < m + reach; x++) {
      const dx = x + 0.5 - half;
      const dy = y + 0.5 - half;
      const d2 = dx * dx + dy * dy;
      if (d2 > (2.5 * sigma) ** 2 + 0.5) continue;
      entries.push([y * stride + x, Math.exp(-d2 / (2 * sigma * sigma))]);
    }
  }
  const sum = entries.reduce((s, e) => s + e[1]!, 0);
  return {
    offsets: Int32Array.from(entries, (e) => e[0]!),
    cells: new Int32Array(entries.length).fill(-1),
    weights: Float32Array.from(entries, (e) => e[1]! / sum),
    inner: entries.length,
    solid: new Uint8Array(entries.length),
  };
}

/** Module grid extended by the quiet zone, with the expected colour and role of each cell. */
interface Grid {
  /** Cells per side: matrix size + 2 * quiet zone. */
  readonly side: number;
  readonly dark: Uint8Array;
  readonly role: Uint8Array;
  /** Top-left pixel (image coordinates) of cell (0, 0). */
  readonly x0: number;
  readonly y0: number;
  readonly m: number;
}

function gridOf(geometry: QrGeometry, image: RawImage): Grid {
  const { matrix, layout, control } = geometry;
  const m = layout.moduleSize;
  const q = layout.quietZoneModules;
  if (!Number.isInteger(m) || m < 1) throw new RangeError(`moduleSize must be a positive integer, got ${m}`);
  if (matrix.dark.length !== matrix.size * matrix.size || matrix.role.length !== matrix.dark.length) throw new RangeError('matrix arrays do not match its size');
  if (layout.codePixels !== matrix.size * m) throw new RangeError(`layout (${layout.codePixels} px) does not match a ${matrix.size}-module matrix at ${m} px`);
  if (control && (control.width !== image.width || control.height !== image.height || control.channels !== 1)) {
    throw new RangeError(`the control image must be 1-channel ${image.width}x${image.height}, got ${control.channels}-channel ${control.width}x${control.height}`);
  }
  const side = matrix.size + 2 * q;
  const x0 = layout.codeX - q * m;
  const y0 = layout.codeY - q * m;
  if (x0 < 0 || y0 < 0 || x0 + side * m > image.width || y0 + side * m > image.height) {
    throw new RangeError(`the code with its quiet zone (${side * m} px at ${x0}, ${y0}) is not inside the ${image.width}x${image.height} image`);
  }
  const dark = new Uint8Array(side * side);
  const role = new Uint8Array(side * side).fill(QUIET);
  for (let r = 0; r < matrix.size; r++) {
    for (let c = 0; c < matrix.size; c++) {
      const i = (r + q) * side + c + q;
      dark[i] = matrix.dark[r * matrix.size + c]!;
      role[i] = matrix.role[r * matrix.size + c]!;
    }
  }
  return { side, dark, role, x0, y0, m };
}

/**
 * The code sides (px, without quiet zone) a decoder may read the code at: decodeSides, but a
 * dense code is never read smaller than MIN_MODULE_PX per module (the capture family's near end
 * is lifted for it), so smaller decode sides count as that one.
 */
function decodeScales(matrixSize: number, decodeSides: readonly number[]): number[] {
  return decodeSides.map((side) => Math.max(side, MIN_MODULE_PX * matrixSize));
}

/** Windows (px) with `w` added, unless one within 15% is listed: it gives nearly the same threshold. */
function withDistinct(windows: number[], w: number): number[] {
  if (windows.every((v) => Math.max(v / w, w / v) > 1.15)) windows.push(w);
  return windows;
}

/** Window sides (px) of ZXing's and OpenCV's binarizers in this image: native, and at each decode scale. */
function windowsFor(codePixels: number, matrixSize: number, decodeSides: readonly number[]): number[] {
  return decodeScales(matrixSize, decodeSides).reduce((windows, s) => withDistinct(windows, BINARIZER_WINDOW * Math.max(1, codePixels / s)), [BINARIZER_WINDOW]);
}

/**
 * ZBar's binarizer compares each pixel with the mean of a box far wider than ZXing's: the
 * smallest power of two from 16 to 256 px that is at least an eighth of the frame
 * (zbar/qrcode/binarize.c), about 5 (version 1) to 20 (version 10) modules across over the
 * capture family. A light module that is light only against its own neighbourhood (an
 * alignment pattern's grey ring between dark modules, in light art) reads dark there. The
 * window sides, in this image's pixels, at each scale the family captures the code at (its
 * frame: the placed square and FRAME_PAD of it around).
 */
function zbarWindowsFor(codePixels: number, matrixSize: number, quietZoneModules: number, decodeSides: readonly number[]): number[] {
  return decodeScales(matrixSize, decodeSides).reduce((windows: number[], s) => {
    const frame = s * ((matrixSize + 2 * quietZoneModules) / matrixSize) * (1 + 2 * FRAME_PAD);
    let box = 16;
    while (box < 256 && box < Math.ceil(frame / 8)) box *= 2;
    return withDistinct(windows, box * (codePixels / s));
  }, []);
}

interface Region {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

const isPattern = (role: number) => role !== ModuleRole.Data;

/** A module's goals and the code-wide figures of one check. */
interface Pass {
  readonly status: Uint8Array;
  /** Luminance the read value and the core must reach (per module). */
  readonly goal: Float32Array;
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

class Checker {
  readonly grid: Grid;
  readonly region: Region;
  /** Luminance of the region; repairs write their new values here. */
  readonly luma: Float32Array;
  /** Sum table of luma with a leading row and column of zeros. */
  private readonly integral: Float64Array;
  /** 1 for every region pixel a repair changed. */
  readonly touched: Uint8Array;
  private readonly windows: readonly number[];
  /** ZBar's box windows (zbarWindowsFor): plain means only. */
  private readonly zbarWindows: readonly number[];
  /** The read value's kernel; absent when captureBlur is 0 (the core's mean is the read value). */
  private readonly kernel: Footprint | undefined;
  /** The far read's kernel (farReadSigma); absent when farBlur is 0. */
  private readonly farKernel: Footprint | undefined;
  /** Cores by kind (0 data disk, 1 pattern square, 2 quiet-zone square) and growth step. */
  private readonly cores: readonly [readonly Footprint[], readonly Footprint[], readonly Footprint[]];
  private readonly options: Resolved;
  /** Region offset of each cell's top-left pixel. */
  private readonly bases: Int32Array;
  /** Read value of each cell at the last check. */
  private readonly values: Float32Array;
  /** Per cell and module pixel: how much the pattern draws that pixel in the cell's colour (0..1); absent without control. */
  private readonly shape: Float32Array | undefined;
  /** 1 for the cells of codewords left to error correction (spare). */
  private readonly spared: Uint8Array;
  private readonly matrix: QrMatrix;
  private readonly quiet: number;

  constructor(image: RawImage, geometry: QrGeometry, options: Resolved) {
    this.options = options;
    const grid = (this.grid = gridOf(geometry, image));
    const { side, m, x0, y0 } = grid;
    this.windows = windowsFor(geometry.layout.codePixels, geometry.matrix.size, options.decodeSides);
    this.zbarWindows = zbarWindowsFor(geometry.layout.codePixels, geometry.matrix.size, geometry.layout.quietZoneModules, options.decodeSides);
    // The camera blur in this image's pixels: the photo shows the placed square at captureSide px,
    // or closer for a dense code (the capture family never has a module under MIN_MODULE_PX).
    const sigma = (options.captureBlur * (side * m)) / Math.max(options.captureSide, MIN_MODULE_PX * side);
    // The region reaches past the code by half the widest window and the blur's reach, past the
    // image's edge too (edge pixels repeated), so every read stays inside the buffer.
    const farSigma = farReadSigma(options, side) * m;
    // (The far read's threshold window is cut to the region rather than widening it: the region's
    // extent sets the finder's flat-dark limit, and the other reads stay as they were.)
    const reach = Math.ceil(Math.max(Math.max(...this.windows, ...this.zbarWindows) / 2, 2.5 * Math.max(sigma, farSigma) + m));
    this.region = { x: x0 - reach, y: y0 - reach, width: side * m + 2 * reach, height: side * m + 2 * reach };
    const { width, height } = this.region;
    this.luma = new Float32Array(width * height);
    this.integral = new Float64Array((width + 1) * (height + 1));
    this.touched = new Uint8Array(width * height);
    readLuma(image, this.region, this.luma);
    this.kernel = sigma > 0 ? readKernel(m, width, sigma) : undefined;
    this.farKernel = farSigma > 0 ? readKernel(m, width, farSigma) : undefined;
    const steps = (ratio: number, square: boolean) => {
      const list: Footprint[] = [];
      for (let r = ratio; ; r = Math.min(1, r + GROWTH)) {
        list.push(coreOf(m, width, r, square, sigma));
        if (r >= 1) break;
      }
      return list;
    };
    // Quiet-zone cells are repaired whole, so neighbouring repairs join into one light band.
    this.cores = [steps(options.coreRatio, false), steps(options.patternRatio, true), steps(1, true)];
    this.bases = new Int32Array(side * side);
    this.values = new Float32Array(side * side);
    for (let i = 0; i < side * side; i++) {
      const r = Math.floor(i / side);
      this.bases[i] = (y0 + r * m - this.region.y) * width + (x0 + (i - r * side) * m - this.region.x);
    }
    this.shape = geometry.control ? shapeOf(geometry.control, grid) : undefined;
    this.spared = new Uint8Array(side * side);
    this.matrix = geometry.matrix;
    this.quiet = geometry.layout.quietZoneModules;
  }

  /**
   * Leaves codewords to the decoders' error correction: in each block, up to `share` of what it
   * corrects, the codewords with the most wrong or weak data modules at this check. A decoder
   * corrects a codeword whole, however many of its modules are wrong, so each spared codeword
   * keeps as much of the art as one error can. (Weighting codewords by how far their modules
   * fall short instead of by how many fail kept less: docs/scan-repair.md.) Codewords near the
   * bottom-right alignment pattern are never spared.
   */
  spare(pass: Pass, share: number): void {
    const { codeword, block, blocks, correctable } = codewordMap(this.matrix);
    const budget = Math.floor(share * correctable);
    if (budget === 0) return;
    const { size } = this.matrix;
    const { side } = this.grid;
    const cellOf = (i: number) => (Math.floor(i / size) + this.quiet) * side + (i % size) + this.quiet;
    const failing = new Int32Array(block.length);
    for (const [i, cw] of codeword.entries()) if (cw >= 0 && pass.status[cellOf(i)] !== Status.Ok && !pass.farOnly[cellOf(i)]) failing[cw]!++;
    // Java ZXing fits its grid to the alignment pattern nearest the bottom-right corner, found by
    // a 1:1:1 search about 4 modules around where the finders put it (then 8, then 16): art left
    // there can pass for the pattern and skew the whole grid. ALIGNMENT_REACH covers the first
    // window and the estimate's error.
    const [farthest] = alignmentCentres(this.matrix.version).slice(-1);
    if (farthest) {
      const [ar, ac] = farthest;
      for (const [i, cw] of codeword.entries()) {
        if (cw >= 0 && Math.max(Math.abs(Math.floor(i / size) - ar), Math.abs((i % size) - ac)) <= ALIGNMENT_REACH) failing[cw] = 0;
      }
    }
    const chosen = new Uint8Array(block.length);
    for (let b = 0; b < blocks; b++) {
      const own = [...block.keys()].filter((k) => block[k] === b && failing[k]! > 0).sort((x, y) => failing[y]! - failing[x]!);
      for (const k of own.slice(0, budget)) chosen[k] = 1;
    }
    for (const [i, cw] of codeword.entries()) if (cw >= 0 && chosen[cw]) this.spared[cellOf(i)] = 1;
  }

  private updateIntegral(): void {
    const { width, height } = this.region;
    const stride = width + 1;
    const { luma, integral } = this;
    for (let y = 0; y < height; y++) {
      let row = 0;
      const from = y * width;
      const up = y * stride;
      const to = up + stride;
      for (let x = 0; x < width; x++) {
        row += luma[from + x]!;
        integral[to + x + 1] = integral[up + x + 1]! + row;
      }
    }
  }

  /** Mean luminance over the square of side `w` centred on (cx, cy) (region coordinates). */
  private boxMean(cx: number, cy: number, w: number): number {
    const { width, height } = this.region;
    const x0 = Math.max(0, Math.round(cx - w / 2));
    const y0 = Math.max(0, Math.round(cy - w / 2));
    const x1 = Math.min(width, Math.round(cx + w / 2));
    const y1 = Math.min(height, Math.round(cy + w / 2));
    return this.rectMean(x0, y0, x1, y1);
  }

  /** Mean luminance over [x0, x1) x [y0, y1) (region coordinates, within the region). */
  private rectMean(x0: number, y0: number, x1: number, y1: number): number {
    const stride = this.region.width + 1;
    const s = this.integral;
    return (s[y1 * stride + x1]! - s[y0 * stride + x1]! - s[y1 * stride + x0]! + s[y0 * stride + x0]!) / ((x1 - x0) * (y1 - y0));
  }

  /**
   * ZXing's hybrid binarizer's threshold at every cell's centre, once per scale a decoder may
   * read the code at (the binarizer windows' scales), block-grid phase (whole and half blocks:
   * whether a block is flat depends on where the grid falls) and exposure (EXPOSURES)
   * (hybrid-threshold.ts). NaN where a decoder would binarize globally.
   */
  private hybridThresholds(): Float32Array[] {
    const { side, m, x0, y0 } = this.grid;
    const centres = new Float32Array(2 * side * side);
    for (let i = 0; i < side * side; i++) {
      const r = Math.floor(i / side);
      centres[2 * i] = x0 + (i - r * side) * m + m / 2 - this.region.x;
      centres[2 * i + 1] = y0 + r * m + m / 2 - this.region.y;
    }
    const { width, height } = this.region;
    const means = { width, height, mean: (ax: number, ay: number, bx: number, by: number) => this.rectMean(ax, ay, bx, by) };
    const out: Float32Array[] = [];
    for (const w of this.windows) out.push(...hybridThresholdMaps(means, w / BINARIZER_WINDOW, centres, EXPOSURES, HALF_BLOCK_PHASES));
    return out;
  }

  /** Weighted sum of luma over a footprint at `base`. */
  private sum(base: number, f: Footprint, count = f.offsets.length): number {
    const { luma } = this;
    let v = 0;
    for (let k = 0; k < count; k++) v += f.weights[k]! * luma[base + f.offsets[k]!]!;
    return v;
  }

  private coresOf(i: number): readonly Footprint[] {
    const role = this.grid.role[i]!;
    // Finder modules are repaired whole, like the quiet zone: seamless rings rather than squares
    // with the art showing between them (measured on 40 generated images: fewer repair passes and
    // a slightly higher SSIM, the referees reading as many captures).
    return this.cores[role === QUIET || role === ModuleRole.Finder ? 2 : isPattern(role) ? 1 : 0];
  }

  /** The read value of cell i: the blurred centre, or without blur the starting core's mean. */
  private read(i: number): number {
    const base = this.bases[i]!;
    if (this.kernel) return this.sum(base, this.kernel);
    const core = this.coresOf(i)[0]!;
    return this.sum(base, core, core.inner) / core.inner;
  }

  /** Mean luminance of cell i's starting core (its weight-1 pixels). */
  private coreMean(i: number): number {
    const core = this.coresOf(i)[0]!;
    return this.sum(this.bases[i]!, core, core.inner) / core.inner;
  }

  /** Share of cell i's pixels at or below `split`. */
  private darkShare(i: number, split: number): number {
    const { m } = this.grid;
    const { luma } = this;
    const { width } = this.region;
    let n = 0;
    for (let y = 0, o = this.bases[i]!; y < m; y++, o += width) for (let x = 0; x < m; x++) if (luma[o + x]! <= split) n++;
    return n / (m * m);
  }

  /** Checks every module into `pass`. */
  check(pass: Pass): void {
    const { side, m, x0, y0, dark, role } = this.grid;
    const { margin, contrast, areaGap } = this.options;
    const cells = side * side;
    this.updateIntegral();
    const { values } = this;
    for (let i = 0; i < cells; i++) values[i] = this.read(i);
    // Thresholds first, then the code's mean dark share (OpenCV's reference), then the verdicts.
    const lows = new Float32Array(cells);
    const highs = new Float32Array(cells);
    const shares = new Float32Array(cells);
    let shareSum = 0;
    let shareCount = 0;
    const hybrid = this.hybridThresholds();
    const quietLevel = this.quietLevel();
    // A finder's dark modules are a wide flat run: dark only while darker than half the light
    // around them, as a phone sees it (hybrid-threshold.ts, flatDarkLimit). An alignment
    // pattern's are held to the same: its centre, one module between light rings, blurs first.
    const finderDark = flatDarkLimit(quietLevel, this.rectMean(0, 0, this.region.width, this.region.height));
    for (let i = 0; i < cells; i++) {
      const r = Math.floor(i / side);
      const cx = x0 + (i - r * side) * m + m / 2 - this.region.x;
      const cy = y0 + r * m + m / 2 - this.region.y;
      let lo = 255;
      let hi = 0;
      for (const w of this.windows) {
        const t = this.boxMean(cx, cy, w);
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
      // OpenCV's split is the local means'; the centre is read against ZXing's hybrid
      // thresholds too.
      pass.split[i] = (lo + hi) / 2;
      // ZBar's (its 3-level bias left out: the margins below are wider).
      for (const w of this.zbarWindows) {
        const t = this.boxMean(cx, cy, w);
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
      for (const t of hybrid) {
        const v = t[i]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      if ((role[i] === ModuleRole.Finder || role[i] === ModuleRole.Alignment) && dark[i] === 1) lo = Math.min(lo, finderDark);
      // The far read's goal: the mean of the farWindow box, less (plus) farMargin.
      if (this.farKernel) {
        const far = this.boxMean(cx, cy, this.options.farWindow * m);
        pass.farGoal[i] = dark[i] === 1 ? far - this.options.farMargin : far + this.options.farMargin;
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
      const core = this.coreMean(i);
      const worst = isDark ? Math.max(values[i]!, core) : Math.min(values[i]!, core);
      const share = shares[i]!;
      // Misread: on the wrong side of the threshold (a module level with the threshold in a
      // flat region reads as its region does: not counted), or of OpenCV's mean share.
      const misread = isDark ? worst > lo + 1 || share <= meanShare : worst < hi - 1 || share >= meanShare;
      const short = isDark ? worst > goal + 0.5 || share < meanShare + areaGap : worst < goal - 0.5 || share > meanShare - areaGap;
      // The far read short of its goal (wrong side of its threshold included) is weak, not
      // wrong: it is repaired whenever the module check or the verdict calls for a repair, but
      // never calls for one itself nor for a stronger pass. Counting it wrong changed neither
      // the referees' reads nor the SSIM over 150 bench images (docs/scan-repair.md).
      let farShort = false;
      if (this.farKernel) {
        const far = this.sum(this.bases[i]!, this.farKernel);
        farShort = isDark ? far > pass.farGoal[i]! + 0.5 : far < pass.farGoal[i]! - 0.5;
      }
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

  /** Median read value of the quiet-zone ring (at the last check). */
  private quietLevel(): number {
    const { role } = this.grid;
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
    const { side, role } = this.grid;
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
    const { side, dark } = this.grid;
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

  /**
   * Repairs cell i toward `pass`'s goals: the smallest core (growing from the starting one)
   * whose clamp gives the read value its goal and the cell its area share, clamped at the
   * mildest level that does. Returns whether a pixel changed.
   */
  repair(i: number, pass: Pass): boolean {
    const base = this.bases[i]!;
    const isDark = this.grid.dark[i] === 1;
    const goal = pass.goal[i]!;
    const need = Math.max(0, isDark ? this.read(i) - goal : goal - this.read(i));
    const far = this.farKernel && this.sum(base, this.farKernel);
    const farNeed = far === undefined ? 0 : Math.max(0, isDark ? far - pass.farGoal[i]! : pass.farGoal[i]! - far);
    const shareGoal = isDark ? pass.meanShare + this.options.areaGap : pass.meanShare - this.options.areaGap;
    const cores = this.coresOf(i);
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
      let l = need > 0 && this.kernel ? this.levelFor(base, core, weights, isDark, need, goal, this.kernel) : goal;
      // The far read's goal too: the stronger of the two levels, and a larger core when this
      // one cannot move the far read enough at any level.
      if (l !== undefined && farNeed > 0 && this.farKernel) {
        const farLevel = this.levelFor(base, core, weights, isDark, farNeed, goal, this.farKernel);
        l = farLevel === undefined ? undefined : isDark ? Math.min(l, farLevel) : Math.max(l, farLevel);
      }
      if (last) level = l;
      if (l === undefined) continue;
      chosen = core;
      level = l;
      break;
    }
    level ??= isDark ? 0 : 255;
    // The core itself ends on the right side of the goal, whatever the blur would allow.
    level = isDark ? Math.min(level, goal) : Math.max(level, goal);
    return this.clamp(base, chosen, this.weightsOf(i, chosen), isDark, level);
  }

  /** Reused by weightsOf: one cell's weights at a time. */
  private scratch = new Float32Array(0);

  /**
   * A core's per-pixel weights for cell i: its feather times how much the pattern draws the
   * pixel in the cell's colour. Valid until the next call (a shared buffer).
   */
  private weightsOf(i: number, core: Footprint): Float32Array {
    const { shape } = this;
    // Function patterns are repaired in their standard shape: a styled eye (leaf, soft) that a
    // decoder misreads comes back as the plain squares detection looks for.
    if (!shape || this.grid.role[i] !== ModuleRole.Data) return core.weights;
    const n = core.weights.length;
    if (this.scratch.length < n) this.scratch = new Float32Array(n);
    const out = this.scratch;
    const at = i * this.grid.m * this.grid.m;
    const { weights, cells } = core;
    for (let k = 0; k < n; k++) out[k] = weights[k]! * shape[at + cells[k]!]!;
    return out;
  }

  private inCore = new Uint8Array(0);

  /** The cell's dark share once `core` is clamped past `split`. */
  private shareMet(i: number, core: Footprint, weights: Float32Array, isDark: boolean, split: number, shareGoal: number): boolean {
    const { m } = this.grid;
    const { luma } = this;
    const base = this.bases[i]!;
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
    const { width } = this.region;
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
    const { luma } = this;
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

  private clamp(base: number, core: Footprint, weights: Float32Array, isDark: boolean, level: number): boolean {
    const { luma, touched } = this;
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

/**
 * Per cell, per module pixel: how much the control image draws that pixel in the cell's own
 * colour (dark cells: 1 where the control is black; light cells: 1 where it is white).
 */
function shapeOf(control: RawImage, grid: Grid): Float32Array {
  const { side, m, x0, y0, dark } = grid;
  const out = new Float32Array(side * side * m * m);
  for (let i = 0; i < side * side; i++) {
    const r = Math.floor(i / side);
    const c = i - r * side;
    const at = i * m * m;
    for (let y = 0; y < m; y++) {
      const row = (y0 + r * m + y) * control.width + x0 + c * m;
      for (let x = 0; x < m; x++) {
        const v = control.data[row + x]! / 255;
        out[at + y * m + x] = dark[i] ? 1 - v : v;
      }
    }
  }
  return out;
}

/** Luminance of the region; outside the image, the nearest edge pixel's. */
function readLuma(image: RawImage, region: Region, out: Float32Array): void {
  const { data, width, height, channels } = image;
  const column = Int32Array.from({ length: region.width }, (_, x) => Math.min(width - 1, Math.max(0, region.x + x)) * channels);
  for (let y = 0; y < region.height; y++) {
    const row = Math.min(height - 1, Math.max(0, region.y + y)) * width * channels;
    const o = y * region.width;
    if (channels === 1) {
      for (let x = 0; x < region.width; x++) out[o + x] = data[row + column[x]!]!;
    } else {
      for (let x = 0; x < region.width; x++) {
        const s = row + column[x]!;
        out[o + x] = (WR * data[s]! + WG * data[s + 1]! + WB * data[s + 2]!) / 1024;
      }
    }
  }
}

function newPass(cells: number): Pass {
  return {
    status: new Uint8Array(cells),
    goal: new Float32Array(cells),
    split: new Float32Array(cells),
    farGoal: new Float32Array(cells),
    farOnly: new Uint8Array(cells),
    meanShare: 0,
    check: { modules: cells, wrong: 0, weak: 0, wrongFunction: 0, wrongDataShare: 0, spared: 0 },
  };
}

/**
 * The first check into `pass`; with a share to spare, the codewords left to error correction are
 * chosen from it and the modules checked again. Returns the check before any sparing.
 */
function firstCheck(checker: Checker, pass: Pass, spareShare: number): ModuleCheck {
  checker.check(pass);
  const before = pass.check;
  if (spareShare > 0) {
    checker.spare(pass, spareShare);
    checker.check(pass);
  }
  return before;
}

/** The check alone: how many modules a phone's decoder would misread (wrong) or nearly misread (weak). */
export function checkModules(image: RawImage, geometry: QrGeometry, options: RepairOptions = {}): ModuleCheck {
  const resolved = resolve(options);
  const checker = new Checker(image, geometry, resolved);
  const pass = newPass(checker.grid.side ** 2);
  firstCheck(checker, pass, resolved.spareShare);
  return pass.check;
}

/**
 * Check -> repair rounds until no module is wrong or weak (or `rounds` is reached, then up to
 * `rounds` more for wrong modules alone); returns a new image in which only failing modules'
 * cores changed. The input is not modified.
 */
export function repairModules(image: RawImage, geometry: QrGeometry, options: RepairOptions = {}): RepairResult {
  const resolved = resolve(options);
  const checker = new Checker(image, geometry, resolved);
  const cells = checker.grid.side ** 2;
  const pass = newPass(cells);
  const changedMask = new Uint8Array(cells);
  const before = firstCheck(checker, pass, resolved.spareShare);
  let changedModules = 0;
  // After `rounds` rounds, as many again for wrong modules alone: repairs of weak ones (the far
  // read's above all) move their neighbours' thresholds, and a pass that ends on a wrong module
  // is followed by a stronger one, at a cost to the art.
  for (let round = 0; round < 2 * resolved.rounds; round++) {
    const settling = round >= resolved.rounds;
    if (pass.check.wrong + (settling ? 0 : pass.check.weak) === 0) break;
    let changedNow = 0;
    for (let i = 0; i < cells; i++) {
      const s = pass.status[i];
      if ((s !== Status.Wrong && (settling || s !== Status.Weak)) || !checker.repair(i, pass)) continue;
      changedNow++;
      if (!changedMask[i]) {
        changedMask[i] = 1;
        changedModules++;
      }
    }
    checker.check(pass);
    if (changedNow === 0) break; // nothing more the cores can do
  }
  if (changedModules === 0) return { image, changedModules: 0, changedPixels: 0, before, after: pass.check, changedMask };
  const { data, changedPixels } = recolour(image, checker.region, checker.luma, checker.touched);
  return { image: rawImage(data, image.width, image.height, image.channels), changedModules, changedPixels, before, after: pass.check, changedMask };
}

/** A copy of the image with each touched pixel moved to its new luminance, hue kept. */
function recolour(image: RawImage, region: Region, luma: Float32Array, touched: Uint8Array): { data: Uint8Array; changedPixels: number } {
  const { width, channels } = image;
  const out = Uint8Array.from(image.data);
  const rgb = [0, 0, 0];
  let changedPixels = 0;
  for (let y = 0; y < region.height; y++) {
    for (let x = 0; x < region.width; x++) {
      const i = y * region.width + x;
      if (!touched[i]) continue;
      // Only module cores are ever touched, and the code lies inside the image.
      const s = ((region.y + y) * width + region.x + x) * channels;
      const goal = luma[i]!;
      if (channels === 1) {
        const v = Math.round(goal);
        if (v !== out[s]) {
          out[s] = v;
          changedPixels++;
        }
        continue;
      }
      shiftLuminance(out[s]!, out[s + 1]!, out[s + 2]!, goal, rgb);
      const r = Math.round(rgb[0]!);
      const g = Math.round(rgb[1]!);
      const b = Math.round(rgb[2]!);
      if (r !== out[s] || g !== out[s + 1] || b !== out[s + 2]) {
        out[s] = r;
        out[s + 1] = g;
        out[s + 2] = b;
        changedPixels++;
      }
    }
  }
  return { data: out, changedPixels };
}

/**
 * The colour of (r, g, b) at luminance `goal`, hue kept: darker is a scale toward black (hue and
 * saturation kept); lighter is a scale up until the brightest channel reaches 255, then a mix
 * toward white (hue kept, saturation given up only as far as needed). Writes floats into out.
 */
export function shiftLuminance(r: number, g: number, b: number, goal: number, out: number[]): void {
  const y = (WR * r + WG * g + WB * b) / 1024;
  if (goal <= y) {
    const f = y > 0 ? Math.max(0, goal) / y : 0;
    out[0] = r * f;
    out[1] = g * f;
    out[2] = b * f;
    return;
  }
  const max = Math.max(r, g, b);
  const f = max > 0 && y > 0 ? Math.min(goal / y, 255 / max) : 1;
  let R = r * f;
  let G = g * f;
  let B = b * f;
  const scaled = y * f;
  if (scaled < goal - 1e-6) {
    const k = Math.min(1, (goal - scaled) / (255 - scaled));
    R += (255 - R) * k;
    G += (255 - G) * k;
    B += (255 - B) * k;
  }
  out[0] = Math.min(255, R);
  out[1] = Math.min(255, G);
  out[2] = Math.min(255, B);
}
