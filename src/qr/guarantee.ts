/**
 * "Scannable by construction": the last step of a QR job. Each output image is scan-checked and
 * module-checked; one that fails (or every one, at the `always` level) gets its misread modules
 * repaired (repair.ts) and is checked again, with a stronger repair each pass, until it scans and
 * no module is misread, or the pass bound is reached. What comes back is the image to deliver and
 * the scan verdict on *that* image, which is what isScanables reports.
 *
 * What "fails" means at `on_failure`: the scan check (ZXing + jsQR over a ladder of scales) tries
 * hard, and an artistic code it reads on its fifth try may not survive a phone's camera, nor a
 * stricter decoder (ZBar, OpenCV). So an image is also repaired when the module check finds
 * modules a phone's decoder would misread, or more than MAX_WEAK_SHARE of them read right only
 * by a hair. An image that passes both is delivered untouched.
 */
import type { RawImage } from '../image/raw.ts';
import { isQrRepairMode, QR_REPAIR_MODES, type QrRepairMode } from '../workflows/catalogue.ts';
import { checkModules, DEFAULT_REPAIR_OPTIONS, repairModules, type ModuleCheck, type QrGeometry, type RepairOptions } from './repair.ts';
import { scanCheck, type ScanOptions, type ScanVerdict } from './scan.ts';

export type { QrGeometry } from './repair.ts';

/** The request's qrRepair levels (the workflow catalogue lists them, with each workflow's default). */
export type RepairMode = QrRepairMode;
export { QR_REPAIR_MODES as REPAIR_MODES, isQrRepairMode as isRepairMode };

export interface GuaranteeResult {
  /** The image to deliver: the input itself when nothing was repaired, else a repaired copy. */
  readonly image: RawImage;
  /** The scan verdict on `image` (isScanables). */
  readonly scannable: boolean;
  readonly repaired: boolean;
  /** Modules changed over all passes (a module changed twice counts once; quiet-zone modules included). */
  readonly changedModules: number;
  /** Pixels of `image` that differ from the input. */
  readonly changedPixels: number;
  /** Repair passes run (0 when none). */
  readonly passes: number;
  /** Milliseconds in the repair passes and their scan checks (0 when none ran): the rest was the first check. */
  readonly repairMs: number;
  /** The last scan check, on `image`. */
  readonly verdict: ScanVerdict;
  /** The module check of the input and of `image` (absent without geometry or with mode off). */
  readonly modulesBefore?: ModuleCheck;
  readonly modulesAfter?: ModuleCheck;
}

export interface GuaranteeOptions {
  /** Side of the code in px: the scan check's scale hint. */
  readonly codeSide?: number;
  /** Repair passes at most (default 3); 0 only checks. */
  readonly maxPasses?: number;
}

export const DEFAULT_MAX_PASSES = 3;

/**
 * Share of modules that may read right by less than the margins before an image that passes the
 * scan check is repaired anyway at `on_failure`.
 */
export const MAX_WEAK_SHARE = 0.02;

/** Repair settings of pass p (1-based): each pass asks for more margin, contrast and area. */
export function passOptions(pass: number): RepairOptions {
  const d = DEFAULT_REPAIR_OPTIONS;
  const k = pass - 1;
  return {
    coreRatio: Math.min(0.8, d.coreRatio + 0.1 * k),
    margin: d.margin * (1 + k),
    contrast: Math.min(128, d.contrast + 24 * k),
    areaGap: Math.min(0.45, d.areaGap + 0.075 * k),
  };
}

/** Whether the module check says a phone may misread this image. */
export function modulesFail(check: ModuleCheck): boolean {
  return check.wrong > 0 || check.weak > MAX_WEAK_SHARE * check.modules;
}

/**
 * The delivered image and its verdict. `geometry` is where the code is in `image` (our own
 * renders); without it the image can only be checked, never repaired. Never mutates `image`.
 */
export async function ensureScannable(
  image: RawImage,
  expected: string,
  geometry: QrGeometry | undefined,
  mode: RepairMode,
  options: GuaranteeOptions = {},
): Promise<GuaranteeResult> {
  if (!isQrRepairMode(mode)) throw new RangeError(`unknown repair mode ${String(mode)}; one of ${QR_REPAIR_MODES.join(', ')}`);
  const maxPasses = options.maxPasses ?? DEFAULT_MAX_PASSES;
  if (!Number.isInteger(maxPasses) || maxPasses < 0) throw new RangeError(`maxPasses must be a non-negative integer, got ${maxPasses}`);
  const scanOptions: ScanOptions = options.codeSide !== undefined ? { codeSide: options.codeSide } : {};
  const first = await scanCheck(image, expected, scanOptions);
  const unchanged = { image, scannable: first.scannable, repaired: false, changedModules: 0, changedPixels: 0, passes: 0, repairMs: 0, verdict: first };
  if (mode === 'off' || !geometry) return unchanged;
  const modulesBefore = checkModules(image, geometry);
  if (maxPasses === 0 || (mode === 'on_failure' && first.scannable && !modulesFail(modulesBefore))) {
    return { ...unchanged, modulesBefore, modulesAfter: modulesBefore };
  }

  const r0 = performance.now();
  let current = image;
  let verdict = first;
  let modulesAfter = modulesBefore;
  let changedMask: Uint8Array | undefined;
  let passes = 0;
  while (passes < maxPasses) {
    passes++;
    const result = repairModules(current, geometry, passOptions(passes));
    changedMask ??= new Uint8Array(result.changedMask.length);
    for (let i = 0; i < changedMask.length; i++) changedMask[i]! |= result.changedMask[i]!;
    const changed = result.image !== current;
    current = result.image;
    modulesAfter = result.after;
    // A pass that changed nothing leaves the verdict as it was.
    if (changed) verdict = await scanCheck(current, expected, scanOptions);
    // Done when it scans and no module is misread; otherwise a stronger pass, while passes remain.
    if (verdict.scannable && modulesAfter.wrong === 0) break;
  }
  const changedModules = changedMask ? changedMask.reduce((n, v) => n + v, 0) : 0;
  return {
    image: current,
    scannable: verdict.scannable,
    repaired: current !== image,
    changedModules,
    changedPixels: countChangedPixels(image, current),
    passes,
    repairMs: performance.now() - r0,
    verdict,
    modulesBefore,
    modulesAfter,
  };
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
