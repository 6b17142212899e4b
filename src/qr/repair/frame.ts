/**
 * What the check and the repair of one image share: the module grid, the luminance plane around
 * it, the windows a decoder thresholds against, the read kernels (near and far photo) and the
 * cores a repair may change, and each module's read values.
 */
import { rawImage, type RawImage } from '../../image/raw.ts';
import { MIN_MODULE_PX } from '../capture-family.ts';
import { ModuleRole } from '../encode.ts';
import { coreSteps, farReadSigma, readKernel, type Footprint } from './footprint.ts';
import { gridOf, isPattern, QUIET, shapeOf, type Grid, type QrGeometry } from './grid.ts';
import { LumaPlane } from './luma-plane.ts';
import type { Resolved } from './options.ts';
import { windowsFor, zbarWindowsFor } from './windows.ts';

export class RepairFrame {
  readonly options: Resolved;
  readonly geometry: QrGeometry;
  readonly grid: Grid;
  readonly plane: LumaPlane;
  /** ZXing's and OpenCV's binarizer windows (windowsFor). */
  readonly windows: readonly number[];
  /** ZBar's box windows (zbarWindowsFor): plain means only. */
  readonly zbarWindows: readonly number[];
  /** The read value's kernel; absent when captureBlur is 0 (the core's mean is the read value). */
  readonly kernel: Footprint | undefined;
  /** The far read's kernel (farReadSigma); absent when farBlur is 0. */
  readonly farKernel: Footprint | undefined;
  /**
   * Per cell: how far the far read of the code drawn plain (black on white) clears its threshold
   * (plainFarClearance); absent without the far read.
   */
  readonly farClearance: Float32Array | undefined;
  /** Plane offset of each cell's top-left pixel. */
  readonly bases: Int32Array;
  /** Per cell and module pixel: how much the pattern draws that pixel in the cell's colour (0..1); absent without control. */
  readonly shape: Float32Array | undefined;
  /** Cores by kind (0 data disk, 1 pattern square, 2 quiet-zone square) and growth step. */
  private readonly cores: readonly [readonly Footprint[], readonly Footprint[], readonly Footprint[]];

  constructor(image: RawImage, geometry: QrGeometry, options: Resolved) {
    this.options = options;
    this.geometry = geometry;
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
    this.plane = new LumaPlane(image, { x: x0 - reach, y: y0 - reach, width: side * m + 2 * reach, height: side * m + 2 * reach });
    const { region } = this.plane;
    const { width } = region;
    this.kernel = sigma > 0 ? readKernel(m, width, sigma) : undefined;
    this.farKernel = farSigma > 0 ? readKernel(m, width, farSigma) : undefined;
    // Quiet-zone cells are repaired whole, so neighbouring repairs join into one light band.
    this.cores = [coreSteps(m, width, options.coreRatio, false, sigma), coreSteps(m, width, options.patternRatio, true, sigma), coreSteps(m, width, 1, true, sigma)];
    this.bases = new Int32Array(side * side);
    for (let i = 0; i < side * side; i++) {
      const r = Math.floor(i / side);
      this.bases[i] = (y0 + r * m - region.y) * width + (x0 + (i - r * side) * m - region.x);
    }
    this.shape = geometry.control ? shapeOf(geometry.control, grid) : undefined;
    this.farClearance = this.farKernel && this.plainFarClearance(this.farKernel);
  }

  /**
   * The far read's clearance, per cell, of the same code drawn plain: black modules on white,
   * white around. Some modules of a plain code clear it by only a little (a lone module among the
   * other colour blurs toward them), and art is not asked for more than a plain code gives.
   */
  private plainFarClearance(farKernel: Footprint): Float32Array {
    const { side, m, x0, y0, dark } = this.grid;
    // Drawn over the region alone: the code lies inside the image (gridOf), so what the region
    // holds past the image's edges is white either way.
    const { region } = this.plane;
    const { width, height } = region;
    const plain = new Uint8Array(width * height).fill(255);
    for (let i = 0; i < side * side; i++) {
      if (!dark[i]) continue;
      const r = Math.floor(i / side);
      const left = x0 + (i - r * side) * m - region.x;
      const top = y0 + r * m - region.y;
      for (let y = top; y < top + m; y++) plain.fill(0, y * width + left, y * width + left + m);
    }
    const plane = new LumaPlane(rawImage(plain, width, height, 1), { x: 0, y: 0, width, height });
    plane.updateSums();
    const out = new Float32Array(side * side);
    for (let i = 0; i < side * side; i++) {
      const [cx, cy] = this.centre(i);
      const threshold = plane.boxMean(cx, cy, this.options.farWindow * m);
      const far = plane.sum(this.bases[i]!, farKernel);
      out[i] = dark[i] ? threshold - far : far - threshold;
    }
    return out;
  }

  /** Cell i's cores, the starting one first, each a growth step larger, the last the whole module. */
  coresOf(i: number): readonly Footprint[] {
    const role = this.grid.role[i]!;
    // Finder and alignment modules are repaired whole, like the quiet zone: seamless rings rather
    // than squares with the art showing between them. Finders: measured on 40 generated images,
    // fewer repair passes and a slightly higher SSIM, the referees reading as many captures.
    // Alignment patterns: Java ZXing finds them by their 1:1:1 runs, and a ring of squares blurs
    // lighter in a small capture (over 300 bench images its held-out misses went from 2 images to
    // 1, for 0.001 of the code square's SSIM).
    return this.cores[role === QUIET || role === ModuleRole.Finder || role === ModuleRole.Alignment ? 2 : isPattern(role) ? 1 : 0];
  }

  /** The read value of cell i: the blurred centre, or without blur the starting core's mean. */
  read(i: number): number {
    if (this.kernel) return this.plane.sum(this.bases[i]!, this.kernel);
    return this.coreMean(i);
  }

  /** The far read of cell i; undefined without the far read. */
  farRead(i: number): number | undefined {
    return this.farKernel && this.plane.sum(this.bases[i]!, this.farKernel);
  }

  /** Mean luminance of cell i's starting core (its weight-1 pixels). */
  coreMean(i: number): number {
    const core = this.coresOf(i)[0]!;
    return this.plane.sum(this.bases[i]!, core, core.inner) / core.inner;
  }

  /** Cell i's centre in plane coordinates. */
  centre(i: number): [number, number] {
    const { side, m, x0, y0 } = this.grid;
    const r = Math.floor(i / side);
    const { region } = this.plane;
    return [x0 + (i - r * side) * m + m / 2 - region.x, y0 + r * m + m / 2 - region.y];
  }
}
