/**
 * Output size table of spec 4.1.3: (aspectRatio, resolution) -> width x height in pixels.
 *
 * Note on the 4:3 UltraHD cell: the spec prints "3456x292 (as listed)". That is an obvious
 * typo: every other 4:3 cell is the transpose of the 3:4 cell in the same column, and the
 * 3:4 UltraHD cell is 2592x3456, so 4:3 UltraHD is 3456x2592 (a 4:3 ratio), which is what
 * this table uses. See docs/workflows.md.
 */
export const ASPECT_RATIOS = ['1:1', '3:4', '4:3', '9:16', '16:9'] as const;
export const RESOLUTIONS = ['SD', 'HD', 'FullHD', 'UltraHD'] as const;

export type AspectRatio = (typeof ASPECT_RATIOS)[number];
export type Resolution = (typeof RESOLUTIONS)[number];

export interface OutputSize {
  readonly width: number;
  readonly height: number;
}

const size = (width: number, height: number): OutputSize => Object.freeze({ width, height });

export const OUTPUT_SIZES: Readonly<Record<AspectRatio, Readonly<Record<Resolution, OutputSize>>>> = Object.freeze({
  '1:1': Object.freeze({ SD: size(768, 768), HD: size(960, 960), FullHD: size(1440, 1440), UltraHD: size(2880, 2880) }),
  '3:4': Object.freeze({ SD: size(672, 896), HD: size(840, 1120), FullHD: size(1248, 1664), UltraHD: size(2592, 3456) }),
  // UltraHD: the spec prints "3456x292 (as listed)", a typo for 3456x2592 (see the file comment).
  '4:3': Object.freeze({ SD: size(896, 672), HD: size(1120, 840), FullHD: size(1664, 1248), UltraHD: size(3456, 2592) }),
  '9:16': Object.freeze({ SD: size(576, 1024), HD: size(720, 1280), FullHD: size(1080, 1920), UltraHD: size(2160, 3840) }),
  '16:9': Object.freeze({ SD: size(1024, 576), HD: size(1280, 720), FullHD: size(1920, 1080), UltraHD: size(3840, 2160) }),
});

export function isAspectRatio(value: unknown): value is AspectRatio {
  return typeof value === 'string' && (ASPECT_RATIOS as readonly string[]).includes(value);
}

export function isResolution(value: unknown): value is Resolution {
  return typeof value === 'string' && (RESOLUTIONS as readonly string[]).includes(value);
}

/** Output size in pixels. Throws a RangeError for a value outside ASPECT_RATIOS / RESOLUTIONS. */
export function outputSize(aspectRatio: AspectRatio, resolution: Resolution): OutputSize {
  if (!isAspectRatio(aspectRatio)) throw new RangeError(`unknown aspectRatio ${String(aspectRatio)}`);
  if (!isResolution(resolution)) throw new RangeError(`unknown resolution ${String(resolution)}`);
  return OUTPUT_SIZES[aspectRatio][resolution];
}

const ALL_SIZES: readonly OutputSize[] = ASPECT_RATIOS.flatMap((a) => RESOLUTIONS.map((r) => OUTPUT_SIZES[a][r]));

/** Longest side of any output in the table (3840). */
export const MAX_OUTPUT_SIDE: number = Math.max(...ALL_SIZES.map((s) => Math.max(s.width, s.height)));
/** Largest area of any output in the table (3456 x 2592 = 8,957,952 pixels). */
export const MAX_OUTPUT_AREA: number = Math.max(...ALL_SIZES.map((s) => s.width * s.height));
