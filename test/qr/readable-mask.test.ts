/**
 * The mask a symbol is drawn with (src/qr/readable-mask.ts): the encoder's lowest penalty unless
 * Java ZXing's port misreads the plain symbol under it, in some orientation.
 */
import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { encodeQr } from '../../src/qr/encode.ts';
import { readsInEveryOrientation } from '../../src/qr/readable-mask.ts';
import { decoders } from '../../src/qr/decoders.ts';
import { rawImage } from '../../src/image/raw.ts';
import type { LumaImage } from '../../src/image/luma.ts';

/** The `qrcode` package's own symbol, as the matrix fields readable-mask.ts reads. */
function packageSymbol(content: string, level: QRCode.QRCodeErrorCorrectionLevel) {
  const code = QRCode.create(content, { errorCorrectionLevel: level });
  return { code, matrix: { size: code.modules.size, dark: Uint8Array.from(code.modules.data as ArrayLike<number>, (v) => (v ? 1 : 0)) } };
}

/** The matrix drawn plainly at 4 px per module with a 4-module quiet zone. */
function drawn(matrix: { size: number; dark: Uint8Array }): LumaImage {
  const side = (matrix.size + 8) * 4;
  const data = new Uint8Array(side * side).fill(255);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const r = Math.floor(y / 4) - 4;
      const c = Math.floor(x / 4) - 4;
      if (r >= 0 && c >= 0 && r < matrix.size && c < matrix.size && matrix.dark[r * matrix.size + c] === 1) data[y * side + x] = 0;
    }
  }
  return rawImage(data, side, side, 1) as LumaImage;
}

describe('the mask a symbol is drawn with', () => {
  // A scan-bench job's content (version 8 at level H): under the package's mask, a run among the
  // data modules passes ZXing's finder test across and down before the third finder is reached.
  const falseFinder = 'https://shop.example.com/products/winter-jacket?utm_source=qr&utm_medium=print#53';

  it('moves off a mask under which Java ZXing takes data modules for a finder, to one it reads every way round', async () => {
    const { code, matrix } = packageSymbol(falseFinder, 'H');
    expect(readsInEveryOrientation(matrix, falseFinder)).toBe(false);
    const ours = encodeQr(falseFinder, 'H');
    expect(ours.version).toBe(code.version);
    expect(ours.dark).not.toEqual(matrix.dark);
    expect(readsInEveryOrientation(ours, falseFinder)).toBe(true);
    // Still a valid symbol for every decoder, not only for the one that chose it.
    expect(await decoders.zbar(drawn(ours))).toEqual([falseFinder]);
  });

  it("keeps the encoder's own mask when Java ZXing reads the plain symbol under it", () => {
    for (const [content, level] of [
      [falseFinder, 'M'],
      ['https://qr-art.example/p/hybrid', 'H'],
    ] as const) {
      const { matrix } = packageSymbol(content, level);
      expect(readsInEveryOrientation(matrix, content)).toBe(true);
      expect(encodeQr(content, level).dark).toEqual(matrix.dark);
    }
  });
});
