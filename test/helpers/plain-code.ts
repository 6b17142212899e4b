/** A plain control image of a code for the scan bench's capture-model tests, and where its code lies. */
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import type { RawImage } from '../../src/image/raw.ts';

/** `content` drawn plain (pattern s1, white background) at 0.8 of `canvas`: the image, its placed square's side and its modules across. */
export function plainCode(content: string, canvas: { width: number; height: number }): { image: RawImage; placedSide: number; modules: number } {
  const control = renderControlImage({ content, pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'white' });
  const { placement, moduleSize } = control.layout;
  return { image: control.image, placedSide: placement.side, modules: placement.side / moduleSize };
}
