/** The repair's options: what a caller may set, the defaults, and their checked, resolved form. */

export interface RepairOptions {
  /** Starting diameter of the checked and repaired disk of a data module, as a fraction of its side (default 0.5). */
  readonly coreRatio?: number;
  /** Starting side of the repaired square of a timing, format or version module (default 0.8; finder and alignment modules are repaired whole). */
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
  /**
   * Luminance levels the far read must clear its threshold by (default 20: a phone's contrast
   * loss, down to 0.7, and JPEG's error at 2-3 px per module eat about that much).
   */
  readonly farMargin?: number;
  /**
   * Finders nearer a plain code's contrast: when above 0, the core of a finder's 3x3 centre is
   * held to this share of the quiet zone's light at most, and its light modules' cores (rings and
   * separator) to the quiet zone's light at least (default 0: a finder's modules meet the other
   * modules' goals only). ZBar's scan lines split a finder of less contrast in a close, noisy
   * photo (docs/scan-repair.md).
   */
  readonly finderCentreShare?: number;
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
  farMargin: 20,
  finderCentreShare: 0,
});

/** The options with every default filled in, checked (resolve). */
export type Resolved = { readonly [K in keyof typeof DEFAULT_REPAIR_OPTIONS]: (typeof DEFAULT_REPAIR_OPTIONS)[K] extends readonly number[] ? readonly number[] : number };

/** The options over the defaults; a RangeError naming the option for a value out of range. */
export function resolve(options: RepairOptions): Resolved {
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
  check(r.finderCentreShare >= 0 && r.finderCentreShare < 1, `finderCentreShare must be in [0, 1), got ${r.finderCentreShare}`);
  return r;
}

