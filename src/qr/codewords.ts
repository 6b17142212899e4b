/**
 * Which codeword, and which Reed-Solomon block, each data module of a symbol carries (ISO 18004
 * 7.5-7.7). A decoder corrects up to half a block's EC codewords per block, whatever is wrong
 * inside them: a codeword with one bad module and one with eight cost the same. The repair leans
 * on that to leave a few codewords of the art alone (repair/), and locate.ts counts how many
 * codewords two matrices differ in.
 */
import { getBlocksCount, getTotalCodewordsCount } from 'qrcode/lib/core/error-correction-code.js';
import { from as eccFrom } from 'qrcode/lib/core/error-correction-level.js';
import { getSymbolTotalCodewords } from 'qrcode/lib/core/utils.js';
import { ModuleRole, type QrMatrix } from './encode.ts';

export interface CodewordMap {
  /** Per module (row-major): the codeword's index in the symbol's interleaved sequence, -1 for function modules and remainder bits. */
  readonly codeword: Int32Array;
  /** Per interleaved codeword: its block. */
  readonly block: Uint16Array;
  readonly blocks: number;
  /** Codewords each block can have wrong and still decode: half its EC codewords. */
  readonly correctable: number;
}

/**
 * Data-region modules in placement order (ISO 18004 7.7.3): column pairs from the right, upward
 * then downward in turn, right column before left, skipping the vertical timing column.
 */
export function placementOrder(matrix: Pick<QrMatrix, 'size' | 'role'>): number[] {
  const { size, role } = matrix;
  const order: number[] = [];
  let up = true;
  for (let right = size - 1; right > 0; right -= 2) {
    if (right === 6) right--;
    for (let k = 0; k < size; k++) {
      const row = up ? size - 1 - k : k;
      for (const col of [right, right - 1]) {
        const i = row * size + col;
        if (role[i] === ModuleRole.Data) order.push(i);
      }
    }
    up = !up;
  }
  return order;
}

/**
 * The symbol's codeword layout: blocks of the shorter data length first, data codewords
 * interleaved across the blocks, then the EC codewords likewise (ISO 18004 7.6).
 */
export function codewordMap(matrix: QrMatrix): CodewordMap {
  const level = eccFrom(matrix.errorCorrectionLevel);
  const total = getSymbolTotalCodewords(matrix.version);
  const ecTotal = getTotalCodewordsCount(matrix.version, level);
  const blocks = getBlocksCount(matrix.version, level);
  const ecPerBlock = ecTotal / blocks;
  const dataTotal = total - ecTotal;
  const shortData = Math.floor(dataTotal / blocks);
  const longBlocks = dataTotal % blocks;
  const dataOf = (b: number) => shortData + (b >= blocks - longBlocks ? 1 : 0);
  const block = new Uint16Array(total);
  let n = 0;
  for (let k = 0; k <= shortData; k++) for (let b = 0; b < blocks; b++) if (k < dataOf(b)) block[n++] = b;
  for (let k = 0; k < ecPerBlock; k++) for (let b = 0; b < blocks; b++) block[n++] = b;
  const codeword = new Int32Array(matrix.size * matrix.size).fill(-1);
  for (const [bit, i] of placementOrder(matrix).entries()) if (bit < 8 * total) codeword[i] = bit >> 3;
  return { codeword, block, blocks, correctable: Math.floor(ecPerBlock / 2) };
}
