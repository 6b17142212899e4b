/**
 * Where a regeneration pass may redraw: the modules the scan repair changed (its changedMask),
 * grown by a ring of whole modules so the model has room to draw each module's shape, with the
 * edge feathered over a fraction of a module so no seam shows. In the image's pixels, 0..1.
 */
import type { QrGeometry } from './repair/index.ts';

export interface RepairMaskOptions {
  /** Modules around each changed module that are redrawn too (default 1). */
  readonly growModules?: number;
  /** Feather width as a fraction of a module (default 0.5). */
  readonly feather?: number;
}

/**
 * `changedMask`: per module of the code with its quiet zone (row-major, side = matrix size +
 * 2 × quiet zone), 1 where the repair changed it. Returns a mask of width × height.
 */
export function repairRegionMask(geometry: QrGeometry, changedMask: Uint8Array, width: number, height: number, options: RepairMaskOptions = {}): Float32Array {
  const { layout, matrix } = geometry;
  const m = layout.moduleSize;
  const q = layout.quietZoneModules;
  const side = matrix.size + 2 * q;
  if (changedMask.length !== side * side) throw new RangeError(`changedMask has ${changedMask.length} entries, the code with its quiet zone ${side * side}`);
  const grow = options.growModules ?? 1;
  const x0 = layout.codeX - q * m;
  const y0 = layout.codeY - q * m;

  // Two box blurs of radius r make a smooth ramp 4r wide centred on each edge of the hard mask;
  // the hard mask reaches 2r past the grown modules so that the ramp lies wholly outside them.
  const radius = Math.max(1, Math.round(((options.feather ?? 0.5) * m) / 4));
  const reach = 2 * radius;
  const hard = new Float32Array(width * height);
  for (let r = 0; r < side; r++) {
    for (let c = 0; c < side; c++) {
      if (!changedMask[r * side + c]) continue;
      const top = Math.max(0, y0 + (r - grow) * m - reach);
      const bottom = Math.min(height, y0 + (r + grow + 1) * m + reach);
      const left = Math.max(0, x0 + (c - grow) * m - reach);
      const right = Math.min(width, x0 + (c + grow + 1) * m + reach);
      for (let y = top; y < bottom; y++) hard.fill(1, y * width + left, y * width + right);
    }
  }
  return boxBlur(boxBlur(hard, width, height, radius), width, height, radius);
}

/** Separable box blur with edge clamping. */
function boxBlur(src: Float32Array, width: number, height: number, r: number): Float32Array {
  const tmp = new Float32Array(src.length);
  const out = new Float32Array(src.length);
  const n = 2 * r + 1;
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let sum = 0;
    for (let k = -r; k <= r; k++) sum += src[row + Math.min(width - 1, Math.max(0, k))]!;
    for (let x = 0; x < width; x++) {
      tmp[row + x] = sum / n;
      sum += src[row + Math.min(width - 1, x + r + 1)]! - src[row + Math.max(0, x - r)]!;
    }
  }
  for (let x = 0; x < width; x++) {
    let sum = 0;
    for (let k = -r; k <= r; k++) sum += tmp[Math.min(height - 1, Math.max(0, k)) * width + x]!;
    for (let y = 0; y < height; y++) {
      out[y * width + x] = sum / n;
      sum += tmp[Math.min(height - 1, y + r + 1) * width + x]! - tmp[Math.max(0, y - r) * width + x]!;
    }
  }
  return out;
}
