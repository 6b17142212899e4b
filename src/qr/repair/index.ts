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
 *               core (a disk of `coreRatio` of the module; the issue's "central disk about a
 *               third of the module"), and the read value: the luminance at the centre as a phone
 *               sees it, Gaussian-blurred by a camera blur of ~1 px when the code spans ~220 px
 *               (in this image's pixels). A dot that is right at full resolution but melts into
 *               its surroundings in a photo is wrong.
 *   far         a far photo (the code with its quiet zone at ~140 px, farSide: 2-3 px per module
 *               for a dense code) reads each module through a wider blur (farReadSigma); it must clear
 *               the mean of a farWindow-module box by farMargin, but never by more than half of
 *               what the code drawn plain clears there (frame.ts, plainFarClearance). Short of it,
 *               a module is weak, never wrong: it is repaired when the image is, and does not pick
 *               spared codewords.
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
 *               the margin); with `finderCentreShare` (codes a far photo resolves) its light
 *               modules' cores as light as the quiet zone itself and its 3x3 centre's at most that
 *               share of it (no darker than the code's darkest dark module). Wrong: misread; weak:
 *               right but short of a margin.
 *
 * The repair of a failing module clamps a core of it: dark modules' core pixels brighter than a
 * level L are brought down to L (darker pixels stay), light ones the other way, with L the mildest
 * level that gives the read value its goal and never short of the goal itself (so the whole core
 * ends on the right side). The core starts as a disk of `coreRatio` of the module for data modules,
 * the whole module for finder and alignment modules (seamless rings: the 1:1:3:1:1 and 1:1:1 runs
 * detection looks for, and the contours OpenCV's detector follows) and a square of `patternRatio`
 * for timing, format and version modules (their standard shape: bars OpenCV counts timing
 * transitions on),
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
import type { RawImage } from '../../image/raw.ts';
import { rawImage } from '../../image/raw.ts';
import { ModuleChecker } from './check.ts';
import { RepairFrame } from './frame.ts';
import type { QrGeometry } from './grid.ts';
import { ModuleRepairer } from './module-repair.ts';
import { resolve, type RepairOptions } from './options.ts';
import { newPass, Status, type ModuleCheck, type Pass } from './pass.ts';
import { recolour } from './recolour.ts';

export { farReadSigma } from './footprint.ts';
export type { QrGeometry } from './grid.ts';
export { DEFAULT_REPAIR_OPTIONS, type RepairOptions } from './options.ts';
export type { ModuleCheck } from './pass.ts';
export { shiftLuminance } from './recolour.ts';

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

/**
 * The first check into `pass`; with a share to spare, the codewords left to error correction are
 * chosen from it and the modules checked again. Returns the check before any sparing.
 */
function firstCheck(checker: ModuleChecker, pass: Pass, spareShare: number): ModuleCheck {
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
  const frame = new RepairFrame(image, geometry, resolved);
  const pass = newPass(frame.grid.side ** 2);
  firstCheck(new ModuleChecker(frame), pass, resolved.spareShare);
  return pass.check;
}

/**
 * Check -> repair rounds until no module is wrong or weak (or `rounds` is reached, then up to
 * `rounds` more for wrong modules alone); returns a new image in which only failing modules'
 * cores changed. The input is not modified.
 */
export function repairModules(image: RawImage, geometry: QrGeometry, options: RepairOptions = {}): RepairResult {
  const resolved = resolve(options);
  const frame = new RepairFrame(image, geometry, resolved);
  const checker = new ModuleChecker(frame);
  const repairer = new ModuleRepairer(frame);
  const cells = frame.grid.side ** 2;
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
      if ((s !== Status.Wrong && (settling || s !== Status.Weak)) || !repairer.repair(i, pass)) continue;
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
  const { data, changedPixels } = recolour(image, frame.plane);
  return { image: rawImage(data, image.width, image.height, image.channels), changedModules, changedPixels, before, after: pass.check, changedMask };
}
