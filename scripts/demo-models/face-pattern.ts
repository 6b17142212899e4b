/**
 * The test pattern the demo face detector (face-detector.ts) finds: "faces" are filled discs of
 * one skin tone, each with two dark eye dots, on any background that is not that tone.
 *
 * The pattern, exactly (d = the disc's diameter in pixels):
 *   - disc: colour FACE_SKIN, centre (cx, cy), radius d/2;
 *   - eyes: colour FACE_EYE, radius EYE_RADIUS × d, centres (cx ± EYE_DX × d, cy − EYE_DY × d);
 *   - faces lie at least one diameter apart (edge to edge), each fully inside the image.
 * The detector sees the image stretched to 320 × 240, so discs become ellipses there; the
 * smallest face it finds spans about 20 of those input pixels, the largest about 200.
 */
import { rawImage, type RawImage } from '../../src/image/raw.ts';

export const FACE_SKIN = [230, 180, 150] as const;
export const FACE_EYE = [40, 30, 30] as const;
export const EYE_RADIUS = 0.08;
export const EYE_DX = 0.2;
export const EYE_DY = 0.1;

export interface PatternFace {
  readonly cx: number;
  readonly cy: number;
  /** Diameter in pixels. */
  readonly d: number;
}

/** An RGB image of `background` with the given faces drawn on it (hard edges). */
export function facePattern(width: number, height: number, faces: readonly PatternFace[], background: readonly [number, number, number] = [70, 110, 160]): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let p = 0; p < width * height; p++) data.set(background, p * 3);
  const disc = (cx: number, cy: number, r: number, colour: readonly number[]): void => {
    for (let y = Math.max(0, Math.floor(cy - r)); y <= Math.min(height - 1, Math.ceil(cy + r)); y++) {
      for (let x = Math.max(0, Math.floor(cx - r)); x <= Math.min(width - 1, Math.ceil(cx + r)); x++) {
        if ((x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2 <= r * r) data.set(colour, (y * width + x) * 3);
      }
    }
  };
  for (const f of faces) {
    disc(f.cx, f.cy, f.d / 2, FACE_SKIN);
    for (const side of [-1, 1]) disc(f.cx + side * EYE_DX * f.d, f.cy - EYE_DY * f.d, EYE_RADIUS * f.d, FACE_EYE);
  }
  return rawImage(data, width, height, 3);
}

/** The box a face occupies, in pixels: [x1, y1, x2, y2]. */
export function faceBox(f: PatternFace): [number, number, number, number] {
  return [f.cx - f.d / 2, f.cy - f.d / 2, f.cx + f.d / 2, f.cy + f.d / 2];
}
