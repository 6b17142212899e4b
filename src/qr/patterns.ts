/**
 * The 18 values of qrCodePartern: six module families times three variants. Each is plain
 * data the rasteriser (raster.ts) reads; docs/patterns.md describes them and
 * docs/patterns.png shows them (scripts/render-pattern-sheet.ts).
 *
 * Scannability rules every entry keeps (the referee tests hold all 18 to them):
 * - a dark data module covers at least its central third (decoders sample module centres);
 * - finder and alignment patterns are drawn as whole solid rings (never as separate small
 *   shapes), so the 1:1:3:1:1 runs through their centres are exact;
 * - timing modules use a fuller shape than the data where the family's shape is small.
 */
/** Values of qrCodePartern, in the order the docs and the sheet list them. */
export const QR_CODE_PATTERNS = [
  's1', 's2', 's3',
  'rd1', 'rd2', 'rd3',
  'd1', 'd2', 'd3',
  'r1', 'r2', 'r3',
  'c1', 'c2', 'c3',
  'sq1', 'sq2', 'sq3',
] as const;
export type QrCodePattern = (typeof QR_CODE_PATTERNS)[number];

/** Corner radii in modules: top-left, top-right, bottom-right, bottom-left, as drawn. */
export type CornerRadii = readonly [number, number, number, number];

/**
 * Shape of one module. Sizes are fractions of the module side.
 * - square: a centred square of side `fill`.
 * - rounded: a centred square of side `fill` whose corners are rounded by `radius` of its half side.
 * - circle: a centred disk of diameter `fill`.
 * - liquid: the whole module; a corner is rounded (radius `radius`) where both of its
 *   orthogonal neighbours are light, so dark runs merge into blobs; with `fillet` > 0 the
 *   concave corner between three dark modules is filled with a curve of that radius.
 */
export type ModuleShape =
  | { readonly kind: 'square'; readonly fill: number }
  | { readonly kind: 'rounded'; readonly fill: number; readonly radius: number }
  | { readonly kind: 'circle'; readonly fill: number }
  | { readonly kind: 'liquid'; readonly radius: number; readonly fillet: number };

/**
 * A finder "eye": the 7x7 ring, given by its outer corner radii in modules (the inner edge
 * follows at radius - 1, keeping the ring one module thick) for each of the three finders,
 * and the 3x3 pupil's corner radii. Alignment patterns reuse the top-left ring at 5x5.
 */
export interface EyeStyle {
  readonly name: string;
  /** Top-left, top-right and bottom-left finder, each as drawn in place. */
  readonly rings: readonly [CornerRadii, CornerRadii, CornerRadii];
  readonly pupil: CornerRadii;
}

export interface PatternStyle {
  readonly pattern: QrCodePattern;
  readonly description: string;
  /** Data, format and version modules. */
  readonly data: ModuleShape;
  /** Timing modules (rows/columns 6). */
  readonly timing: ModuleShape;
  readonly eye: EyeStyle;
}

const all = (r: number): CornerRadii => [r, r, r, r];

// Eye shapes are limited by OpenCV's QRCodeDetector (measured; ZBar reads all of them). It
// builds the code's outline from particular ring corners: each eye's outer corner, its corner
// facing the code centre, and the right corners of the top-right eye and the bottom corners
// of the bottom-left eye (for the fourth corner). Rounding any of those loses it on some of
// the 20 sizes; the corners where two eyes face each other along an edge are free, so "leaf"
// rounds exactly those. Above ~20 px modules OpenCV thresholds with a ~2-module window that
// hollows the pupil: round pupils (radius 1.25 or more) failed on UltraHD canvases and on dense
// version-19 codes, so pupils are at most rounded by 1 module.
const same = (ring: CornerRadii): EyeStyle['rings'] => [ring, ring, ring];

export const EYES = {
  square: { name: 'square', rings: same(all(0)), pupil: all(0) },
  soft: { name: 'soft', rings: same(all(0.3)), pupil: all(1) },
  /** Fully rounded where two eyes face each other along an edge; every other corner sharp. */
  leaf: { name: 'leaf', rings: [[0, 3.5, 0, 3.5], [3.5, 0, 0, 0], [3.5, 0, 0, 0]], pupil: all(0) },
} as const satisfies Record<string, EyeStyle>;

const square = (fill: number): ModuleShape => ({ kind: 'square', fill });
const rounded = (fill: number, radius: number): ModuleShape => ({ kind: 'rounded', fill, radius });
const circle = (fill: number): ModuleShape => ({ kind: 'circle', fill });
const liquid = (radius: number, fillet: number): ModuleShape => ({ kind: 'liquid', radius, fillet });

const style = (pattern: QrCodePattern, description: string, data: ModuleShape, eye: EyeStyle, timing: ModuleShape = data): PatternStyle =>
  Object.freeze({ pattern, description, data, timing, eye });

// Variant 1, 2, 3 of every family: square, soft and leaf eyes.
export const PATTERN_STYLES: Readonly<Record<QrCodePattern, PatternStyle>> = Object.freeze({
  s1: style('s1', 'full square modules, square eyes: the classic code', square(1), EYES.square),
  s2: style('s2', 'full square modules, soft eyes', square(1), EYES.soft),
  s3: style('s3', 'full square modules, leaf eyes', square(1), EYES.leaf),

  rd1: style('rd1', 'separate rounded squares (90% of the module, corner radius 35%), square eyes', rounded(0.9, 0.35), EYES.square),
  rd2: style('rd2', 'separate squircles (88%, corner radius 65%), soft eyes', rounded(0.88, 0.65), EYES.soft),
  rd3: style('rd3', 'separate rounded squares (84%, corner radius 45%), leaf eyes', rounded(0.84, 0.45), EYES.leaf),

  d1: style('d1', 'round dots (72%), square eyes', circle(0.72), EYES.square, circle(0.9)),
  d2: style('d2', 'small round dots (62%), soft eyes', circle(0.62), EYES.soft, circle(0.9)),
  d3: style('d3', 'round dots (76%), leaf eyes', circle(0.76), EYES.leaf, circle(0.9)),

  r1: style('r1', 'liquid: neighbouring modules merge into blobs, round ends and filled concave corners, square eyes', liquid(0.5, 0.3), EYES.square),
  r2: style('r2', 'liquid blobs with round ends and sharp concave corners, soft eyes', liquid(0.5, 0), EYES.soft),
  r3: style('r3', 'tight liquid: small convex radius and fillets (25%), leaf eyes', liquid(0.25, 0.25), EYES.leaf),

  c1: style('c1', 'large circles (96%), nearly touching, square eyes', circle(0.96), EYES.square),
  c2: style('c2', 'large circles (96%), nearly touching, soft eyes', circle(0.96), EYES.soft),
  c3: style('c3', 'circles as wide as the module (touching), leaf eyes', circle(1), EYES.leaf),

  sq1: style('sq1', 'small squares (70%) with gaps, square eyes', square(0.7), EYES.square, square(0.9)),
  sq2: style('sq2', 'smaller squares (58%) with wide gaps, soft eyes', square(0.58), EYES.soft, square(0.9)),
  sq3: style('sq3', 'small squares (76%), leaf eyes', square(0.76), EYES.leaf, square(0.92)),
});

export function patternStyle(pattern: QrCodePattern): PatternStyle {
  const found = PATTERN_STYLES[pattern];
  if (!found) throw new RangeError(`unknown QR pattern ${String(pattern)}`);
  return found;
}
