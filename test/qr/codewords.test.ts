/**
 * The codeword map says which codeword and block each data module carries. Checked two ways:
 * the encoder's own symbols, read back in the map's order, give each block's data and the
 * Reed-Solomon EC of that data; and real decoders read a code with every block's correctable
 * number of codewords wrong, and not one with a codeword more in one block.
 */
import { createRequire } from 'node:module';
import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import type { LumaImage } from '../../src/image/luma.ts';
import { rawImage } from '../../src/image/raw.ts';
import { codewordMap, placementOrder } from '../../src/qr/codewords.ts';
import { encodeQr, matrixOfSymbol, ModuleRole, type ErrorCorrectionLevel, type QrMatrix } from '../../src/qr/encode.ts';
import { zbarDecode, zxingDecode } from '../../src/qr/decoders.ts';

const ReedSolomonEncoder = createRequire(import.meta.url)('qrcode/lib/core/reed-solomon-encoder.js') as new (degree: number) => { encode(data: Uint8Array): Uint8Array };

/** ISO 18004 table 10: whether mask pattern `mask` inverts the module at (row, col). */
const MASKS: ReadonlyArray<(r: number, c: number) => boolean> = [
  (r, c) => (r + c) % 2 === 0,
  (r) => r % 2 === 0,
  (_, c) => c % 3 === 0,
  (r, c) => (r + c) % 3 === 0,
  (r, c) => (Math.floor(r / 2) + Math.floor(c / 3)) % 2 === 0,
  (r, c) => ((r * c) % 2) + ((r * c) % 3) === 0,
  (r, c) => (((r * c) % 2) + ((r * c) % 3)) % 2 === 0,
  (r, c) => (((r + c) % 2) + ((r * c) % 3)) % 2 === 0,
];

const PX = 6;
const QUIET = 4;

function render(matrix: QrMatrix, dark: Uint8Array): LumaImage {
  const side = (matrix.size + 2 * QUIET) * PX;
  const data = new Uint8Array(side * side).fill(255);
  for (let r = 0; r < matrix.size; r++) {
    for (let c = 0; c < matrix.size; c++) {
      if (!dark[r * matrix.size + c]) continue;
      for (let y = 0; y < PX; y++) data.fill(0, ((r + QUIET) * PX + y) * side + (c + QUIET) * PX, ((r + QUIET) * PX + y) * side + (c + QUIET + 1) * PX);
    }
  }
  return rawImage(data, side, side, 1) as LumaImage;
}

/** The matrix with every module of the chosen codewords inverted. */
function corrupt(matrix: QrMatrix, codewords: ReadonlySet<number>): Uint8Array {
  const map = codewordMap(matrix);
  return Uint8Array.from(matrix.dark, (d, i) => (codewords.has(map.codeword[i]!) ? 1 - d : d));
}

/** The first `count` codewords of each block (or of `only` that block). */
function firstOfBlocks(matrix: QrMatrix, count: (block: number) => number): Set<number> {
  const { block, blocks } = codewordMap(matrix);
  const out = new Set<number>();
  for (let b = 0; b < blocks; b++) {
    let taken = 0;
    for (let k = 0; k < block.length && taken < count(b); k++) {
      if (block[k] === b) {
        out.add(k);
        taken++;
      }
    }
  }
  return out;
}

const CASES: Array<[string, ErrorCorrectionLevel]> = [
  ['https://example.com', 'H'],
  ['https://shop.example.com/products/winter-jacket?utm_source=qr&utm_medium=print', 'H'],
  ['https://example.org/a/very/long/path/that/makes/the/code/denser?with=query&and=more&params=1234567890', 'H'],
  ['HELLO WORLD 12345 HELLO WORLD 12345', 'M'],
  // Version 5-Q and 7-H: blocks of two data lengths.
  ['https://example.com/long-enough-for-two-block-groups-42', 'Q'],
  ['https://example.com/long-enough-for-two-block-groups-at-version-7-h-0123456789', 'H'],
];

describe('codewordMap', () => {
  it('covers every data module but the remainder bits, eight modules a codeword', () => {
    for (const [content, level] of CASES) {
      const matrix = encodeQr(content, level);
      const map = codewordMap(matrix);
      const data = placementOrder(matrix);
      expect(data.length).toBe(matrix.role.filter((r) => r === ModuleRole.Data).length);
      const counts = new Map<number, number>();
      for (const i of data) if (map.codeword[i]! >= 0) counts.set(map.codeword[i]!, (counts.get(map.codeword[i]!) ?? 0) + 1);
      expect(counts.size).toBe(map.block.length);
      expect([...counts.values()].every((n) => n === 8)).toBe(true);
      expect(data.length - 8 * map.block.length).toBeLessThan(8);
    }
  });

  it("reads back the encoder's codewords: each block's data followed by that data's Reed-Solomon EC", () => {
    for (const [content, level] of CASES) {
      const symbol = QRCode.create(content, { errorCorrectionLevel: level });
      const matrix = matrixOfSymbol(symbol, level);
      const map = codewordMap(matrix);
      const bytes = new Uint8Array(map.block.length);
      for (const i of placementOrder(matrix)) {
        const cw = map.codeword[i]!;
        if (cw < 0) continue;
        const bit = matrix.dark[i]! ^ Number(MASKS[symbol.maskPattern!]!(Math.floor(i / matrix.size), i % matrix.size));
        bytes[cw] = (bytes[cw]! << 1) | bit;
      }
      const ec = 2 * map.correctable;
      const sizes = new Set<number>();
      for (let b = 0; b < map.blocks; b++) {
        const own = Uint8Array.from([...map.block.keys()].filter((k) => map.block[k] === b), (k) => bytes[k]!);
        sizes.add(own.length);
        const data = own.subarray(0, own.length - ec);
        expect([...new ReedSolomonEncoder(ec).encode(data)], `${level} v${matrix.version} block ${b}`).toEqual([...own.subarray(own.length - ec)]);
      }
      expect(sizes.size, 'blocks of two lengths at most').toBeLessThanOrEqual(2);
    }
  });

  it('names codewords the decoders correct per block: each block at its limit reads, one more in a block does not', async () => {
    for (const [content, level] of CASES) {
      const matrix = encodeQr(content, level);
      const { correctable, blocks } = codewordMap(matrix);
      const atLimit = render(matrix, corrupt(matrix, firstOfBlocks(matrix, () => correctable)));
      expect(await zxingDecode(atLimit), `${level} v${matrix.version}: ${blocks} blocks, ${correctable} wrong each`).toEqual([content]);
      expect(await zbarDecode(atLimit)).toEqual([content]);
      const beyond = render(matrix, corrupt(matrix, firstOfBlocks(matrix, (b) => (b === blocks - 1 ? correctable + 1 : correctable))));
      expect(await zxingDecode(beyond)).not.toContain(content);
      expect(await zbarDecode(beyond)).not.toContain(content);
    }
  });
});
