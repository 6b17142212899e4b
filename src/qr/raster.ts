/**
 * Draws a QR matrix in a pattern style into an 8-bit luminance buffer (0 = dark, 255 = light).
 *
 * Speed: modules are whole pixels, so every module of one kind looks the same. Each distinct
 * shape (per neighbour mask for the liquid family) becomes an anti-aliased tile once per
 * render, from a signed distance function sampled at pixel centres (coverage = 0.5 - d), and
 * is then copied row by row. Finder and alignment patterns are single tiles (7x7 and 5x5
 * modules) so they stay solid whatever the data shape.
 */
import { alignmentCentres, ModuleRole, type QrMatrix } from './encode.ts';
import type { QrLayout } from './layout.ts';
import type { CornerRadii, EyeStyle, ModuleShape, PatternStyle } from './patterns.ts';

/** A 1-channel buffer, rows of `width` bytes; the code is drawn over what is already there. */
export interface LumaTarget {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
}

interface Tile {
  readonly width: number;
  readonly height: number;
  /** One view per pixel row, so a blit is `height` set() calls. */
  readonly rows: readonly Uint8Array[];
}

type Sdf = (x: number, y: number) => number;

// Math.hypot is several times slower than this in V8 and tiles evaluate it per pixel.
const len = (x: number, y: number): number => Math.sqrt(x * x + y * y);

/** Pixels with their centre at signed distance d (px, negative inside) get coverage 0.5 - d. */
function makeTile(width: number, height: number, sdf: Sdf, centred = true): Tile {
  const pixels = new Uint8Array(width * height);
  const ox = centred ? width / 2 : 0;
  const oy = centred ? height / 2 : 0;
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i++) {
      const coverage = 0.5 - sdf(x + 0.5 - ox, y + 0.5 - oy);
      pixels[i] = coverage >= 1 ? 0 : coverage <= 0 ? 255 : Math.round(255 * (1 - coverage));
    }
  }
  const rows: Uint8Array[] = [];
  for (let y = 0; y < height; y++) rows.push(pixels.subarray(y * width, (y + 1) * width));
  return { width, height, rows };
}

function blit(target: LumaTarget, tile: Tile, x: number, y: number): void {
  const { data, width } = target;
  let offset = y * width + x;
  for (const row of tile.rows) {
    data.set(row, offset);
    offset += width;
  }
}

/** Signed distance to a centred square of half side `half` with per-corner radii (tl, tr, br, bl; y down). */
function roundBox(x: number, y: number, half: number, radii: CornerRadii): number {
  const r = Math.min(half, x < 0 ? (y < 0 ? radii[0] : radii[3]) : y < 0 ? radii[1] : radii[2]);
  const qx = Math.abs(x) - half + r;
  const qy = Math.abs(y) - half + r;
  return Math.min(Math.max(qx, qy), 0) + len(Math.max(qx, 0), Math.max(qy, 0)) - r;
}

const scaled = (radii: CornerRadii, k: number, cap: number): CornerRadii =>
  radii.map((r) => Math.max(0, Math.min(cap, r * k))) as unknown as CornerRadii;
const minus = (radii: CornerRadii, d: number): CornerRadii => radii.map((r) => Math.max(0, r - d)) as unknown as CornerRadii;

/**
 * A ring of `half` modules (half side, one module thick) with a centre of `centreHalf`
 * modules; radii in modules. Finder: half 3.5, centre 1.5. Alignment: 2.5 and 0.5.
 */
function ringTile(m: number, half: number, ring: CornerRadii, centreHalf: number, centre: CornerRadii): Tile {
  const side = Math.round(2 * half * m);
  const outer = scaled(ring, m, half * m);
  const inner = scaled(minus(ring, 1), m, (half - 1) * m);
  const dot = scaled(centre, m, centreHalf * m);
  return makeTile(side, side, (x, y) =>
    Math.min(Math.max(roundBox(x, y, half * m, outer), -roundBox(x, y, (half - 1) * m, inner)), roundBox(x, y, centreHalf * m, dot)),
  );
}

function moduleTile(m: number, shape: Exclude<ModuleShape, { kind: 'liquid' }>): Tile {
  const half = (shape.fill * m) / 2;
  switch (shape.kind) {
    case 'square':
      return makeTile(m, m, (x, y) => Math.max(Math.abs(x), Math.abs(y)) - half);
    case 'rounded': {
      const radii: CornerRadii = [shape.radius * half, shape.radius * half, shape.radius * half, shape.radius * half];
      return makeTile(m, m, (x, y) => roundBox(x, y, half, radii));
    }
    case 'circle':
      return makeTile(m, m, (x, y) => len(x, y) - half);
  }
}

// Neighbour bits of the liquid family, for a dark module (which sides touch dark) and for a
// light one (which corners sit between three dark modules and get a fillet).
const N = 1, E = 2, S = 4, W = 8;
const TL = 1, TR = 2, BR = 4, BL = 8;

/** Dark module: a corner is rounded where both sides meeting there face light modules. */
function liquidDarkTile(m: number, radius: number, sides: number): Tile {
  const R = radius * m;
  const round = [!(sides & (N | W)), !(sides & (N | E)), !(sides & (S | E)), !(sides & (S | W))];
  return makeTile(m, m, (x, y) => {
    const left = x < R, right = x > m - R, top = y < R, bottom = y > m - R;
    if (top && left && round[0]) return len(x - R, y - R) - R;
    if (top && right && round[1]) return len(x - (m - R), y - R) - R;
    if (bottom && right && round[2]) return len(x - (m - R), y - (m - R)) - R;
    if (bottom && left && round[3]) return len(x - R, y - (m - R)) - R;
    return -m;
  }, false);
}

/** Light module: concave fillets of radius `fillet` in the flagged corners. */
function liquidFilletTile(m: number, fillet: number, corners: number): Tile {
  const R = fillet * m;
  return makeTile(m, m, (x, y) => {
    const left = x < R, right = x > m - R, top = y < R, bottom = y > m - R;
    if (top && left && corners & TL) return R - len(x - R, y - R);
    if (top && right && corners & TR) return R - len(x - (m - R), y - R);
    if (bottom && right && corners & BR) return R - len(x - (m - R), y - (m - R));
    if (bottom && left && corners & BL) return R - len(x - R, y - (m - R));
    return m;
  }, false);
}

export function drawQr(target: LumaTarget, matrix: QrMatrix, layout: QrLayout, style: PatternStyle): void {
  const { size, dark, role } = matrix;
  const { moduleSize: m, codeX, codeY } = layout;
  if (codeX < 0 || codeY < 0 || codeX + size * m > target.width || codeY + size * m > target.height) {
    throw new RangeError('the QR code does not fit in the target image');
  }
  drawEyes(target, matrix, layout, style.eye);

  const liquid = style.data.kind === 'liquid' ? style.data : null;
  const data = style.data.kind === 'liquid' ? null : moduleTile(m, style.data);
  const timing = style.timing.kind === 'liquid' ? null : moduleTile(m, style.timing);
  const darkTiles: (Tile | undefined)[] = [];
  const filletTiles: (Tile | undefined)[] = [];
  // Blobs never merge into finders or alignment patterns: those are drawn as whole tiles.
  const blob = (r: number, c: number): number => {
    if (r < 0 || c < 0 || r >= size || c >= size) return 0;
    const i = r * size + c;
    return dark[i] && role[i] !== ModuleRole.Finder && role[i] !== ModuleRole.Alignment ? 1 : 0;
  };

  for (let r = 0, i = 0; r < size; r++) {
    for (let c = 0; c < size; c++, i++) {
      const kind = role[i];
      if (kind === ModuleRole.Finder || kind === ModuleRole.Alignment) continue;
      const x = codeX + c * m;
      const y = codeY + r * m;
      if (liquid) {
        if (dark[i]) {
          const sides = (blob(r - 1, c) * N) | (blob(r, c + 1) * E) | (blob(r + 1, c) * S) | (blob(r, c - 1) * W);
          blit(target, (darkTiles[sides] ??= liquidDarkTile(m, liquid.radius, sides)), x, y);
        } else if (liquid.fillet > 0) {
          const n = blob(r - 1, c), e = blob(r, c + 1), s = blob(r + 1, c), w = blob(r, c - 1);
          const corners =
            (n & w & blob(r - 1, c - 1) ? TL : 0) | (n & e & blob(r - 1, c + 1) ? TR : 0) |
            (s & e & blob(r + 1, c + 1) ? BR : 0) | (s & w & blob(r + 1, c - 1) ? BL : 0);
          if (corners) blit(target, (filletTiles[corners] ??= liquidFilletTile(m, liquid.fillet, corners)), x, y);
        }
      } else if (dark[i]) {
        blit(target, kind === ModuleRole.Timing ? timing! : data!, x, y);
      }
    }
  }
}

function drawEyes(target: LumaTarget, matrix: QrMatrix, layout: QrLayout, eye: EyeStyle): void {
  const { size } = matrix;
  const { moduleSize: m, codeX, codeY } = layout;
  const far = (size - 7) * m;
  const [topLeft, topRight, bottomLeft] = eye.rings;
  const tiles = new Map<string, Tile>();
  const tileFor = (ring: CornerRadii): Tile => {
    const key = ring.join();
    let tile = tiles.get(key);
    if (!tile) tiles.set(key, (tile = ringTile(m, 3.5, ring, 1.5, eye.pupil)));
    return tile;
  };
  blit(target, tileFor(topLeft), codeX, codeY);
  blit(target, tileFor(topRight), codeX + far, codeY);
  blit(target, tileFor(bottomLeft), codeX, codeY + far);

  // Alignment patterns: the eye's style at 5/7 scale.
  const centres = alignmentCentres(matrix.version);
  if (centres.length === 0) return;
  const alignment = ringTile(m, 2.5, scaled(topLeft, 5 / 7, 2.5), 0.5, scaled(eye.pupil, 1 / 3, 0.5));
  for (const [r, c] of centres) blit(target, alignment, codeX + (c - 2) * m, codeY + (r - 2) * m);
}
