/**
 * The single phone capture the tests used before the capture family (src/qr/capture-family.ts)
 * existed: the code spanning ~300 px, a few degrees of rotation, slight perspective, blur,
 * flatter contrast, noise, JPEG 60-75. Kept for tests that want one moderate photo (the
 * locators' tests); the simulation itself is the family's. New code should draw from the family.
 */
import { simulateCapture as familyCapture, type Capture, type CaptureParams, type Square } from '../../src/qr/capture-family.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

export type { Capture, CaptureParams, Square } from '../../src/qr/capture-family.ts';

/** The parameters of the single capture model (no motion blur, even light). */
export interface PhoneCaptureParams {
  readonly codeSide: number;
  readonly rotationDeg: number;
  readonly tilt: number;
  readonly blurSigma: number;
  readonly contrast: number;
  readonly brightness: number;
  readonly noise: number;
  readonly jpegQuality: number;
}

/** One capture drawn from the single model's ranges. */
export function captureParams(seed: number): PhoneCaptureParams {
  const random = mulberry32(seed);
  const between = (a: number, b: number) => a + (b - a) * random();
  return {
    codeSide: Math.round(between(260, 340)),
    rotationDeg: between(-6, 6),
    tilt: between(0.01, 0.05),
    blurSigma: between(0.6, 1.1),
    contrast: between(0.6, 0.85),
    brightness: between(-15, 15),
    noise: between(1, 3),
    jpegQuality: Math.round(between(60, 75)),
  };
}

/** The family's capture with the single model's parameters (or the family's own). */
export function simulateCapture(image: Parameters<typeof familyCapture>[0], square: Square | undefined, params: PhoneCaptureParams | CaptureParams, seed = 1): Promise<Capture> {
  const family: CaptureParams =
    'defocusSigma' in params ? params : { ...params, defocusSigma: params.blurSigma, motionPx: 0, motionDeg: 0, lightGradient: 0, lightDeg: 0, vignette: 0 };
  return familyCapture(image, square, family, seed);
}
