/**
 * The binarizer windows a decoder may threshold a module against, in the image's pixels: at
 * native size and at each scale the capture family photographs the code at.
 */
import { FRAME_PAD, MIN_MODULE_PX } from '../capture-family.ts';

/** The 40-pixel binarizer window: 5x5 blocks of 8 px. */
export const BINARIZER_WINDOW = 40;


/**
 * The code sides (px, without quiet zone) a decoder may read the code at: decodeSides, but a
 * dense code is never read smaller than MIN_MODULE_PX per module (the capture family's near end
 * is lifted for it), so smaller decode sides count as that one.
 */
function decodeScales(matrixSize: number, decodeSides: readonly number[]): number[] {
  return decodeSides.map((side) => Math.max(side, MIN_MODULE_PX * matrixSize));
}

/** Windows (px) with `w` added, unless one within 15% is listed: it gives nearly the same threshold. */
function withDistinct(windows: number[], w: number): number[] {
  if (windows.every((v) => Math.max(v / w, w / v) > 1.15)) windows.push(w);
  return windows;
}

/** Window sides (px) of ZXing's and OpenCV's binarizers in this image: native, and at each decode scale. */
export function windowsFor(codePixels: number, matrixSize: number, decodeSides: readonly number[]): number[] {
  return decodeScales(matrixSize, decodeSides).reduce((windows, s) => withDistinct(windows, BINARIZER_WINDOW * Math.max(1, codePixels / s)), [BINARIZER_WINDOW]);
}

/**
 * ZBar's binarizer compares each pixel with the mean of a box far wider than ZXing's: the
 * smallest power of two from 16 to 256 px that is at least an eighth of the frame
 * (zbar/qrcode/binarize.c), about 5 (version 1) to 20 (version 10) modules across over the
 * capture family. A light module that is light only against its own neighbourhood (an
 * alignment pattern's grey ring between dark modules, in light art) reads dark there. The
 * window sides, in this image's pixels, at each scale the family captures the code at (its
 * frame: the placed square and FRAME_PAD of it around).
 */
export function zbarWindowsFor(codePixels: number, matrixSize: number, quietZoneModules: number, decodeSides: readonly number[]): number[] {
  return decodeScales(matrixSize, decodeSides).reduce((windows: number[], s) => {
    const frame = s * ((matrixSize + 2 * quietZoneModules) / matrixSize) * (1 + 2 * FRAME_PAD);
    let box = 16;
    while (box < 256 && box < Math.ceil(frame / 8)) box *= 2;
    return withDistinct(windows, box * (codePixels / s));
  }, []);
}
