/**
 * The ladders the scan-check bench compares: the ladder before issue 14 (six rungs: ZXing's
 * hybrid binarizer at five scales, jsQR at one), that ladder with one kind of widening each,
 * and SCAN_LADDER as it is now. Each widening adds its rungs just before the jsQR rung, where
 * the kept ones sit too. A module-by-module re-read of codes ZXing located but could not decode
 * was measured too (commit 6fc4a38, src/qr/resample.ts there: 6 reads more than the previous
 * ladder on that commit's 440 images, each one a referee makes too, but 1 more than its
 * mean-window ladder) and dropped as not worth its code.
 */
import { SCAN_LADDER, type Rung } from '../../src/qr/scan.ts';

export const PREVIOUS_LADDER: readonly Rung[] = [
  { decoder: 'zxing', codePx: 400, blur: false },
  { decoder: 'zxing', codePx: 240, blur: true },
  { decoder: 'zxing', codePx: 'native', blur: false },
  { decoder: 'zxing', codePx: 200, blur: true },
  { decoder: 'zxing', codePx: 160, blur: false },
  { decoder: 'jsqr', codePx: 160, blur: false },
];

const withRungs = (...rungs: Rung[]): readonly Rung[] => [...PREVIOUS_LADDER.slice(0, -1), ...rungs, PREVIOUS_LADDER.at(-1)!];
const zxing = (codePx: number | 'native', blur: boolean, more: Partial<Rung> = {}): Rung => ({ decoder: 'zxing', codePx, blur, ...more });

export const BENCH_LADDERS: Readonly<Record<string, readonly Rung[]>> = {
  previous: PREVIOUS_LADDER,
  '+GlobalHistogram': withRungs(zxing(400, false, { binarizer: 'GlobalHistogram' }), zxing(240, true, { binarizer: 'GlobalHistogram' })),
  '+FixedThreshold': withRungs(zxing(400, false, { binarizer: 'FixedThreshold' }), zxing(160, true, { binarizer: 'FixedThreshold' })),
  '+BoolCast': withRungs(zxing(240, false, { binarizer: 'BoolCast' })),
  '+tryDenoise': withRungs(zxing(400, true, { denoise: true }), zxing(280, false, { denoise: true })),
  '+tryDownscale': withRungs(zxing('native', true, { downscale: true })),
  '+scales 320/280/120': withRungs(zxing(320, false), zxing(280, true), zxing(120, false)),
  "+MeanWindow 25/10 (WeChat's)": withRungs(zxing(240, false, { binarizer: 'MeanWindow', window: 25, bias: 10 }), zxing(400, false, { binarizer: 'MeanWindow', window: 25, bias: 10 })),
  '+MeanWindow 25/0 only': withRungs(zxing(200, false, { binarizer: 'MeanWindow', window: 25, bias: 0 })),
  '+MeanWindow 15/0 only': withRungs(zxing(200, false, { binarizer: 'MeanWindow', window: 15, bias: 0 })),
  '+MeanWindow 25/0 and 15/0': withRungs(zxing(200, false, { binarizer: 'MeanWindow', window: 25, bias: 0 }), zxing(200, false, { binarizer: 'MeanWindow', window: 15, bias: 0 })),
  '+MeanWindow 25/0 and 15/5 at 240': withRungs(zxing(200, false, { binarizer: 'MeanWindow', window: 25, bias: 0 }), zxing(240, false, { binarizer: 'MeanWindow', window: 15, bias: 5 })),
  now: SCAN_LADDER,
};
