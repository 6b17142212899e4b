/**
 * Sparing: which failing data modules the repair leaves to the decoders' error correction. A
 * decoder corrects a codeword whole, however many of its modules are wrong, so each spared
 * codeword keeps as much of the art as one error can.
 */
import { codewordMap } from '../codewords.ts';
import { alignmentCentres } from '../encode.ts';
import type { QrGeometry } from './grid.ts';
import { Status, type Pass } from './pass.ts';

/** Modules around the bottom-right alignment pattern's centre whose codewords are never spared. */
const ALIGNMENT_REACH = 5;

/**
 * The cells (of a grid `side` cells across, quiet zone included) of the codewords left to error
 * correction: in each block, up to `share` of what it corrects, the codewords with the most wrong
 * or weak data modules in `pass` (weakness by the far read alone not counted: the choice follows
 * the near checks). (Weighting codewords by how far their modules fall short instead of by how
 * many fail kept less: docs/scan-repair.md.) Codewords near the bottom-right alignment pattern
 * are never spared.
 */
export function sparedCells(geometry: QrGeometry, side: number, pass: Pass, share: number): Uint8Array {
  const { matrix } = geometry;
  const quiet = geometry.layout.quietZoneModules;
  const spared = new Uint8Array(side * side);
  const { codeword, block, blocks, correctable } = codewordMap(matrix);
  const budget = Math.floor(share * correctable);
  if (budget === 0) return spared;
  const { size } = matrix;
  const cellOf = (i: number) => (Math.floor(i / size) + quiet) * side + (i % size) + quiet;
  const failing = new Int32Array(block.length);
  for (const [i, cw] of codeword.entries()) if (cw >= 0 && pass.status[cellOf(i)] !== Status.Ok && !pass.farOnly[cellOf(i)]) failing[cw]!++;
  // Java ZXing fits its grid to the alignment pattern nearest the bottom-right corner, found by
  // a 1:1:1 search about 4 modules around where the finders put it (then 8, then 16): art left
  // there can pass for the pattern and skew the whole grid. ALIGNMENT_REACH covers the first
  // window and the estimate's error.
  const [farthest] = alignmentCentres(matrix.version).slice(-1);
  if (farthest) {
    const [ar, ac] = farthest;
    for (const [i, cw] of codeword.entries()) {
      if (cw >= 0 && Math.max(Math.abs(Math.floor(i / size) - ar), Math.abs((i % size) - ac)) <= ALIGNMENT_REACH) failing[cw] = 0;
    }
  }
  const chosen = new Uint8Array(block.length);
  for (let b = 0; b < blocks; b++) {
    const own = [...block.keys()].filter((k) => block[k] === b && failing[k]! > 0).sort((x, y) => failing[y]! - failing[x]!);
    for (const k of own.slice(0, budget)) chosen[k] = 1;
  }
  for (const [i, cw] of codeword.entries()) if (cw >= 0 && chosen[cw]) spared[cellOf(i)] = 1;
  return spared;
}
