/**
 * "Scannable by construction": the last step of a QR job. Each output image gets the family
 * verdict (robustness.ts: the scan check, then a dozen simulated phone captures decoded by ZXing
 * and ZBar); one that fails (or every one, at the `always` level) gets its misread modules
 * repaired (repair/) and is judged again, with a stronger repair each pass, until the verdict
 * holds and no module is misread, or the pass bound is reached. What comes back is the image to
 * deliver, the verdict on *that* image (isScanables) and its robustness: the share of the
 * family's captures read.
 *
 * What "fails" means at `on_failure` (needsRepair): the family verdict is false, or it holds
 * without margin (some capture was not read by every family: ZXing, ZBar and Java ZXing), or the module check
 * (repair/) finds a module a decoder would misread. ZBar in the verdict is what makes the verdict
 * itself the trigger: it does not read the soft, low-contrast art that ZXing and jsQR read, so an
 * image it reads in every capture is one ZBar reads in held-out captures too (docs/scan-repair.md). An image
 * that passes is delivered untouched.
 *
 * The first pass at `on_failure` leaves up to half of what each Reed-Solomon block corrects to the
 * decoders (SPARE_SHARE; not in codes too dense for a far photo, spareShareFor): the codewords with
 * the most failing modules keep the art as drawn. Such a
 * pass is accepted only when both decoder families read every capture and ZBar a few more
 * (sparedPassHolds); otherwise the next pass repairs those codewords too.
 */
import type { RawImage } from '../image/raw.ts';
import { CAPTURE_FAMILY, type Square } from './capture-family.ts';
import { isQrRepairMode, QR_REPAIR_MODES, type QrRepairMode } from './repair-modes.ts';
import { checkModules, DEFAULT_REPAIR_OPTIONS, repairModules, type ModuleCheck, type QrGeometry, type RepairOptions } from './repair/index.ts';
import { captureRobustness, familyVerdict, type FamilyVerdict, type Robustness } from './robustness.ts';
import type { ScanVerdict } from './scan.ts';

export type { QrGeometry } from './repair/index.ts';

export interface GuaranteeResult {
  /** The image to deliver: the input itself when nothing was repaired, else a repaired copy. */
  readonly image: RawImage;
  /** The family verdict on `image` (isScanables): scan check passed and the captures read. */
  readonly scannable: boolean;
  /** Share of the family's captures of `image` read (0..1). */
  readonly robustness: number;
  readonly repaired: boolean;
  /** Modules changed over all passes (a module changed twice counts once; quiet-zone modules included). */
  readonly changedModules: number;
  /** Pixels of `image` that differ from the input. */
  readonly changedPixels: number;
  /** Repair passes run (0 when none). */
  readonly passes: number;
  /** Milliseconds in the repair passes and their verdicts (0 when none ran): the rest was the first verdict. */
  readonly repairMs: number;
  /** The last scan check, on `image`. */
  readonly verdict: ScanVerdict;
  /** The captures of `image`: reads per decoder family, time. */
  readonly captures: Robustness;
  /** The module check of the input and of `image` (absent without geometry or with mode off). */
  readonly modulesBefore?: ModuleCheck;
  readonly modulesAfter?: ModuleCheck;
}

export interface GuaranteeOptions {
  /** Side of the code in px: the scan check's scale hint. */
  readonly codeSide?: number;
  /** Repair passes at most (default DEFAULT_MAX_PASSES); 0 only checks. */
  readonly maxPasses?: number;
  /** Where the code's placed square is when there is no geometry (default: the image's centred square). */
  readonly square?: Square;
}

/** Passes at most: each models a farther, blurrier capture than the last, down to the family's hard end. */
export const DEFAULT_MAX_PASSES = 4;

/**
 * Share of each Reed-Solomon block's correctable codewords the first repair pass at `on_failure`
 * leaves as the art drew them (repair/, `spareShare`): the decoders correct them, with half of
 * what EC corrects still free for what a capture gets wrong. Sparing all of it took more second
 * passes and kept less (docs/scan-repair.md).
 */
export const SPARE_SHARE = 0.5;

/**
 * Sparing needs a code that a far photo still resolves. A phone framing the whole image puts the
 * placed square at ~140 px (the far read's `farSide`): a version-7 code and denser then has under
 * SPARE_MIN_FAR_PX px per module, reads there with errors even drawn plain, and its spared
 * codewords, misread there too, leave error correction too little for them. On the 19 bench images
 * behind the far photos ZBar missed, it read 138 of 228 far photos with sparing, 157 sparing a
 * quarter, 168 with none, and 177 of the plain control images (docs/scan-repair.md). Such codes
 * are repaired whole from the first pass.
 */
export const SPARE_MIN_FAR_PX = 3;

/** Whether a far photo resolves a placed square of `modules` modules (quiet zone included) at SPARE_MIN_FAR_PX px per module or more; an unknown square counts as resolved. */
function resolvedFar(modules: number | undefined): boolean {
  return modules === undefined || DEFAULT_REPAIR_OPTIONS.farSide / modules >= SPARE_MIN_FAR_PX;
}

/** Share of each block's correctable codewords the first pass at `on_failure` spares, for a placed square of `modules` modules (quiet zone included). */
export function spareShareFor(modules: number | undefined): number {
  return resolvedFar(modules) ? SPARE_SHARE : 0;
}

/**
 * A repaired finder's 3x3 centre at most this share of the quiet zone's light, its light rings
 * and separator as light as the quiet zone (repair/, `finderCentreShare`). The repair used to
 * leave finders at about a quarter of a plain code's contrast, and ZBar's scan lines split them in
 * close, noisy photos. Over the 300 bench images this took back 3 of zbarimg's 12 misses there, and
 * Java ZXing read every held-out capture (one missed before; on 80 images of another seed it
 * missed one where it had missed none), for 0.002 / 0.005 of SSIM. The
 * outer dark ring keeps its usual goals: darkened too, it cost Java ZXing held-out captures of
 * dense codes. Dense codes keep their finders as the usual goals leave them (finderCentreShareFor):
 * there even the centre rule cost Java ZXing (docs/scan-repair.md).
 */
export const FINDER_CENTRE_SHARE = 0.1;

/** finderCentreShare for a placed square of `modules` modules (quiet zone included): FINDER_CENTRE_SHARE where a far photo resolves the code, else 0. */
export function finderCentreShareFor(modules: number | undefined): number {
  return resolvedFar(modules) ? FINDER_CENTRE_SHARE : 0;
}

/**
 * A pass that spared codewords is also photographed SPARE_CHECK_COUNT more times from the family
 * with another seed, and ZBar, the strict family, must read every one (it reads every capture of
 * every plain control image: `npm run bench -- scan --calibrate`). Over 300 bench images this
 * sent 25 more images to a full second pass: ZBar's held-out reads 99.7% -> 99.8%, OpenCV's
 * 92.8% -> 94.2%, for SSIM 0.923 / 0.790 -> 0.919 / 0.782 (docs/scan-repair.md). Three such
 * captures sent none.
 */
export const SPARE_CHECK_SEED = 2;
export const SPARE_CHECK_COUNT = 6;

/** Whether ZBar reads every one of the spared pass's extra captures, and nothing reads another content. */
export async function sparedPassHolds(image: RawImage, expected: string, square: Square | undefined, family: { modules?: number }): Promise<boolean> {
  const r = await captureRobustness(image, expected, square, { ...family, seed: SPARE_CHECK_SEED, count: SPARE_CHECK_COUNT });
  return r.byDecoder.zbar === r.captures && r.otherContent === undefined;
}

/**
 * The verdict with margin: it holds, and every one of the family's captures was read by every
 * decoder family (the rule itself allows a miss or more; plain control images of dense codes
 * need that, art that passes this way does not).
 */
export function readByAllEverywhere(verdict: FamilyVerdict): boolean {
  const r = verdict.robustness;
  return verdict.scannable && r !== undefined && r.complete && r.byAll === r.captures;
}

/**
 * Whether `on_failure` works on an image: the verdict fails or holds without margin, or the module
 * check finds a module a decoder would misread (its model of OpenCV's area reading and of finder
 * rings is what the verdict's decoders do not see). Modules that read right by less than the
 * margins ("weak") no longer count: with them every demo image was repaired; without them images
 * that pass are delivered untouched, for about a point of OpenCV's held-out reads (docs/scan-repair.md).
 */
export function needsRepair(verdict: FamilyVerdict, modules: ModuleCheck): boolean {
  return !readByAllEverywhere(verdict) || modules.wrong > 0;
}

/**
 * Repair settings of pass p (1-based) for a placed square of `modules` modules: each pass asks for
 * more margin, contrast and area, and models a farther, blurrier capture.
 */
export function passOptions(pass: number, mode: QrRepairMode = 'always', modules?: number): RepairOptions {
  const d = DEFAULT_REPAIR_OPTIONS;
  const k = pass - 1;
  return {
    coreRatio: Math.min(0.8, d.coreRatio + 0.1 * k),
    margin: d.margin * (1 + k),
    contrast: Math.min(128, d.contrast + 24 * k),
    areaGap: Math.min(0.45, d.areaGap + 0.075 * k),
    captureSide: Math.max(CAPTURE_FAMILY.codeSide[0], d.captureSide - 40 * k),
    captureBlur: d.captureBlur + 0.15 * k,
    // The first pass at on_failure leaves some codewords to error correction (not of a dense
    // code); later passes, and `always`, repair every failing module.
    spareShare: pass === 1 && mode === 'on_failure' ? spareShareFor(modules) : 0,
    finderCentreShare: finderCentreShareFor(modules),
  };
}

/**
 * The delivered image and its verdict. `geometry` is where the code is in `image` (our own
 * renders, or a client's code located on the canvas); without it the image can only be checked,
 * never repaired. Never mutates `image`.
 */
export async function ensureScannable(
  image: RawImage,
  expected: string,
  geometry: QrGeometry | undefined,
  mode: QrRepairMode,
  options: GuaranteeOptions = {},
): Promise<GuaranteeResult> {
  if (!isQrRepairMode(mode)) throw new RangeError(`unknown repair mode ${String(mode)}; one of ${QR_REPAIR_MODES.join(', ')}`);
  const maxPasses = options.maxPasses ?? DEFAULT_MAX_PASSES;
  if (!Number.isInteger(maxPasses) || maxPasses < 0) throw new RangeError(`maxPasses must be a non-negative integer, got ${maxPasses}`);
  const square = geometry ? geometry.layout.placement : options.square;
  // The placed square in modules: the capture family comes closer to dense codes.
  const family = geometry ? { modules: geometry.layout.placement.side / geometry.layout.moduleSize } : {};
  const judge = (candidate: RawImage, quick: boolean): Promise<FamilyVerdict> =>
    familyVerdict(candidate, expected, square, {
      ...family,
      ...(options.codeSide !== undefined ? { codeSide: options.codeSide } : {}),
      // While a repair may follow, a verdict that cannot hold stops early; the delivered image's
      // robustness is completed at the end.
      stopWhenFailed: quick,
      skipWhenUnscannable: quick,
    });
  const mayRepair = mode !== 'off' && geometry !== undefined && maxPasses > 0;
  const first = await judge(image, mayRepair);
  const finish = async (result: Omit<GuaranteeResult, 'robustness' | 'captures'>, verdict: FamilyVerdict): Promise<GuaranteeResult> => {
    const captures = verdict.robustness?.complete ? verdict.robustness : await captureRobustness(result.image, expected, square, family);
    return { ...result, robustness: captures.share, captures };
  };
  const unchanged = { image, scannable: first.scannable, repaired: false, changedModules: 0, changedPixels: 0, passes: 0, repairMs: 0, verdict: first.scan };
  if (!mayRepair || !geometry) return finish(unchanged, first);
  const modulesBefore = checkModules(image, geometry);
  if (mode === 'on_failure' && !needsRepair(first, modulesBefore)) return finish({ ...unchanged, modulesBefore, modulesAfter: modulesBefore }, first);

  const r0 = performance.now();
  let current = image;
  let verdict = first;
  let modulesAfter = modulesBefore;
  let changedMask: Uint8Array | undefined;
  let passes = 0;
  while (passes < maxPasses) {
    passes++;
    const result = repairModules(current, geometry, passOptions(passes, mode, family.modules));
    changedMask ??= new Uint8Array(result.changedMask.length);
    for (let i = 0; i < changedMask.length; i++) changedMask[i]! |= result.changedMask[i]!;
    const changed = result.image !== current;
    current = result.image;
    modulesAfter = result.after;
    // A pass that changed nothing leaves the verdict as it was.
    if (changed) verdict = await judge(current, true);
    // Done when the family reads it and no module is misread (but for codewords left to error
    // correction, and then only when every family reads every capture); otherwise a stronger
    // pass, while passes remain.
    if (verdict.scannable && modulesAfter.wrong === 0 && (modulesAfter.spared === 0 || (readByAllEverywhere(verdict) && (await sparedPassHolds(current, expected, square, family))))) break;
  }
  const changedModules = changedMask ? changedMask.reduce((n, v) => n + v, 0) : 0;
  return finish(
    {
      image: current,
      scannable: verdict.scannable,
      repaired: current !== image,
      changedModules,
      changedPixels: countChangedPixels(image, current),
      passes,
      repairMs: performance.now() - r0,
      verdict: verdict.scan,
      modulesBefore,
      modulesAfter,
    },
    verdict,
  );
}

function countChangedPixels(a: RawImage, b: RawImage): number {
  if (a === b) return 0;
  const { channels } = a;
  let n = 0;
  for (let i = 0; i < a.data.length; i += channels) {
    for (let c = 0; c < channels; c++) {
      if (a.data[i + c] !== b.data[i + c]) {
        n++;
        break;
      }
    }
  }
  return n;
}
