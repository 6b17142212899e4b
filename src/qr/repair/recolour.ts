/** The repaired luminance carried back into the image's colours. */
import { WB, WG, WR } from '../../image/luma.ts';
import type { RawImage } from '../../image/raw.ts';
import type { LumaPlane } from './luma-plane.ts';

/** A copy of the image with each touched pixel moved to its new luminance, hue kept. */
export function recolour(image: RawImage, plane: LumaPlane): { data: Uint8Array; changedPixels: number } {
  const { width, channels } = image;
  const { region, luma, touched } = plane;
  const out = Uint8Array.from(image.data);
  const rgb = [0, 0, 0];
  let changedPixels = 0;
  for (let y = 0; y < region.height; y++) {
    for (let x = 0; x < region.width; x++) {
      const i = y * region.width + x;
      if (!touched[i]) continue;
      // Only module cores are ever touched, and the code lies inside the image.
      const s = ((region.y + y) * width + region.x + x) * channels;
      const goal = luma[i]!;
      if (channels === 1) {
        const v = Math.round(goal);
        if (v !== out[s]) {
          out[s] = v;
          changedPixels++;
        }
        continue;
      }
      shiftLuminance(out[s]!, out[s + 1]!, out[s + 2]!, goal, rgb);
      const r = Math.round(rgb[0]!);
      const g = Math.round(rgb[1]!);
      const b = Math.round(rgb[2]!);
      if (r !== out[s] || g !== out[s + 1] || b !== out[s + 2]) {
        out[s] = r;
        out[s + 1] = g;
        out[s + 2] = b;
        changedPixels++;
      }
    }
  }
  return { data: out, changedPixels };
}

/**
 * The colour of (r, g, b) at luminance `goal`, hue kept: darker is a scale toward black (hue and
 * saturation kept); lighter is a scale up until the brightest channel reaches 255, then a mix
 * toward white (hue kept, saturation given up only as far as needed). Writes floats into out.
 */
export function shiftLuminance(r: number, g: number, b: number, goal: number, out: number[]): void {
  const y = (WR * r + WG * g + WB * b) / 1024;
  if (goal <= y) {
    const f = y > 0 ? Math.max(0, goal) / y : 0;
    out[0] = r * f;
    out[1] = g * f;
    out[2] = b * f;
    return;
  }
  const max = Math.max(r, g, b);
  const f = max > 0 && y > 0 ? Math.min(goal / y, 255 / max) : 1;
  let R = r * f;
  let G = g * f;
  let B = b * f;
  const scaled = y * f;
  if (scaled < goal - 1e-6) {
    const k = Math.min(1, (goal - scaled) / (255 - scaled));
    R += (255 - R) * k;
    G += (255 - G) * k;
    B += (255 - B) * k;
  }
  out[0] = Math.min(255, R);
  out[1] = Math.min(255, G);
  out[2] = Math.min(255, B);
}
