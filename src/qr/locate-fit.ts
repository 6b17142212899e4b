/**
 * Where a code's module grid lies in an image, to a fraction of a pixel, once its matrix is known.
 *
 * ZXing's corner points are whole pixels, good to about one pixel: over a code of 50 modules scaled
 * up 3x into the canvas that is a drift of a third of a module at the far side. The grid is instead
 * fitted to the code's own module edges. Wherever two horizontally neighbouring modules differ in
 * colour, the edge between them is measured along that row with the area method: over a window of
 * one module centred on the predicted edge, the luminance integral is L_left * (e - a) +
 * L_right * (b - e), which gives the edge e exactly for a sharp, antialiased or symmetrically
 * blurred edge (L_left and L_right are read at the two modules' centres). Every measured edge of
 * boundary c should lie at origin + c * pitch: a least-squares fit over hundreds of edges, refitted
 * without outliers (a logo, a styled dot). Rows are the same with the image transposed.
 *
 * The fit also tells whether the code is a grid at all. Two more terms take what a slight rotation
 * (boundaries shifting along the other axis: shear) and a perspective (the pitch changing along the
 * other axis: keystone) do; how far they move the code's corners, and the residual (warping, a
 * photo's lens), say when the image is not axis-aligned and undistorted.
 */
import type { LumaImage } from '../image/luma.ts';

/** The grid along one axis: module boundary c lies at origin + c * pitch. */
export interface AxisFit {
  readonly origin: number;
  readonly pitch: number;
  /**
   * Largest distance, in modules, between where the fit puts a corner boundary of the code and
   * where the plain grid (origin + c * pitch) does: what a rotation (shear) or a perspective
   * (pitch changing along the other axis) would cost the axis-aligned placement.
   */
  readonly drift: number;
  /** Root-mean-square distance of the kept edges from the fitted grid, in modules. */
  readonly rms: number;
  /** Edges measured, and kept after dropping outliers. */
  readonly edges: number;
  readonly kept: number;
}

/** Modules per side, row-major dark flags, and which modules may serve for edges (1: yes). */
export interface GridModel {
  readonly size: number;
  readonly dark: Uint8Array;
  readonly usable: Uint8Array;
}

/** Least luminance step between two modules for their edge to be measured. */
const MIN_STEP = 48;
/** Edges farther than this from the fit (in modules, or 0.5 px when that is more) are outliers. */
const OUTLIER = 0.15;
const ITERATIONS = 3;

/**
 * The grid along x (boundaries between columns), starting from an estimate good to a third of a
 * module; `rows` places the rows (the other axis). Undefined when too few edges can be measured.
 */
export function fitAxis(luma: LumaImage, model: GridModel, start: { origin: number; pitch: number }, rows: { origin: number; pitch: number }): AxisFit | undefined {
  const { size, dark, usable } = model;
  // One luminance profile per module row: the mean over the row's middle 40%, away from the
  // edges to the rows above and below.
  const profiles: Float32Array[] = [];
  const centres: number[] = [];
  for (let r = 0; r < size; r++) {
    const from = Math.min(luma.height - 1, Math.max(0, Math.round(rows.origin + (r + 0.3) * rows.pitch)));
    const to = Math.min(luma.height - 1, Math.max(from, Math.round(rows.origin + (r + 0.7) * rows.pitch) - 1));
    const profile = new Float32Array(luma.width);
    for (let y = from; y <= to; y++) for (let x = 0; x < luma.width; x++) profile[x]! += luma.data[y * luma.width + x]!;
    for (let x = 0; x < luma.width; x++) profile[x]! /= to - from + 1;
    profiles.push(profile);
    centres.push(rows.origin + (r + 0.5) * rows.pitch);
  }
  // The other axis's coordinate is taken from the middle of the code, so origin and pitch are
  // the grid's at its middle row; the column term is centred likewise.
  const middle = rows.origin + (size / 2) * rows.pitch;
  const centre = size / 2;
  let line: Line = { origin: start.origin, pitch: start.pitch, shear: 0, keystone: 0 };
  let result: AxisFit | undefined;
  for (let iteration = 0; iteration < ITERATIONS; iteration++) {
    const measured: Edge[] = [];
    for (let r = 0; r < size; r++) {
      const v = centres[r]! - middle;
      for (let c = 1; c < size; c++) {
        const left = r * size + c - 1;
        if (dark[left] === dark[left + 1] || !usable[left] || !usable[left + 1]) continue;
        const e = measureEdge(profiles[r]!, predict(line, centre, c, v), line.pitch);
        if (e !== undefined) measured.push({ c, v, e });
      }
    }
    if (measured.length < 12) return undefined;
    const first = solve(measured, centre) ?? line;
    // Refit without the edges far from the first fit: a logo or a styled module is not the grid.
    const limit = Math.max(0.5, OUTLIER * first.pitch);
    const kept = measured.filter((m) => Math.abs(m.e - predict(first, centre, m.c, m.v)) <= limit);
    if (kept.length < 12) return undefined;
    line = solve(kept, centre) ?? first;
    let sum = 0;
    for (const m of kept) sum += (m.e - predict(line, centre, m.c, m.v)) ** 2;
    const reach = (size / 2) * rows.pitch;
    const drift = (Math.abs(line.shear) * reach + Math.abs(line.keystone) * centre * reach) / line.pitch;
    result = { origin: line.origin, pitch: line.pitch, drift, rms: Math.sqrt(sum / kept.length) / line.pitch, edges: measured.length, kept: kept.length };
  }
  return result;
}

/**
 * The edge near `predicted` in a profile, by the area method over a window of one module, or
 * undefined when the two modules are too alike or the edge is not inside the window.
 */
function measureEdge(profile: Float32Array, predicted: number, pitch: number): number | undefined {
  const leftLevel = integrate(profile, predicted - 0.75 * pitch, predicted - 0.25 * pitch) / (0.5 * pitch);
  const rightLevel = integrate(profile, predicted + 0.25 * pitch, predicted + 0.75 * pitch) / (0.5 * pitch);
  const step = leftLevel - rightLevel;
  if (Math.abs(step) < MIN_STEP) return undefined;
  const a = predicted - pitch / 2;
  const b = predicted + pitch / 2;
  const e = a + (integrate(profile, a, b) - rightLevel * (b - a)) / step;
  // An edge at the window's rim means the real one may lie beyond it: not a measurement.
  return e > a + 0.05 * pitch && e < b - 0.05 * pitch ? e : undefined;
}

/** The integral of a piecewise-constant profile (pixel i covers [i, i + 1)) over [a, b]; edge pixels repeat outside. */
function integrate(profile: Float32Array, a: number, b: number): number {
  const last = profile.length - 1;
  let sum = 0;
  for (let i = Math.floor(a); i < b; i++) {
    const overlap = Math.min(b, i + 1) - Math.max(a, i);
    if (overlap > 0) sum += overlap * profile[Math.min(last, Math.max(0, i))]!;
  }
  return sum;
}

/** The fitted line of boundaries: e = origin + c * pitch + shear * v + keystone * (c - centre) * v. */
interface Line {
  readonly origin: number;
  readonly pitch: number;
  readonly shear: number;
  readonly keystone: number;
}

interface Edge {
  readonly c: number;
  readonly v: number;
  readonly e: number;
}

function predict(line: Line, centre: number, c: number, v: number): number {
  return line.origin + c * line.pitch + line.shear * v + line.keystone * (c - centre) * v;
}

/** Least squares over the four terms (normal equations, Gaussian elimination with pivoting). */
function solve(points: readonly Edge[], centre: number): Line | undefined {
  const terms = (c: number, v: number) => [1, c, v, (c - centre) * v];
  const a = Array.from({ length: 4 }, () => new Float64Array(5));
  for (const { c, v, e } of points) {
    const t = terms(c, v);
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 4; j++) a[i]![j]! += t[i]! * t[j]!;
      a[i]![4]! += t[i]! * e;
    }
  }
  for (let col = 0; col < 4; col++) {
    let pivot = col;
    for (let r = col + 1; r < 4; r++) if (Math.abs(a[r]![col]!) > Math.abs(a[pivot]![col]!)) pivot = r;
    [a[col], a[pivot]] = [a[pivot]!, a[col]!];
    const p = a[col]![col]!;
    if (Math.abs(p) < 1e-9) return undefined;
    for (let r = 0; r < 4; r++) {
      if (r === col) continue;
      const f = a[r]![col]! / p;
      for (let k = col; k < 5; k++) a[r]![k]! -= f * a[col]![k]!;
    }
  }
  const x = a.map((row, i) => row[4]! / row[i]!);
  return { origin: x[0]!, pitch: x[1]!, shear: x[2]!, keystone: x[3]! };
}

/** The image with rows and columns swapped: the y axis is fitted as the x axis of this. */
export function transpose(luma: LumaImage): LumaImage {
  const { width, height, data } = luma;
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) out[x * height + y] = data[y * width + x]!;
  return { data: out, width: height, height: width, channels: 1 };
}

/** The model with rows and columns swapped, for transpose(). */
export function transposeModel(model: GridModel): GridModel {
  const { size } = model;
  const swap = (a: Uint8Array) => {
    const out = new Uint8Array(a.length);
    for (let r = 0; r < size; r++) for (let c = 0; c < size; c++) out[c * size + r] = a[r * size + c]!;
    return out;
  };
  return { size, dark: swap(model.dark), usable: swap(model.usable) };
}
