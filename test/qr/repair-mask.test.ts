import { describe, expect, it } from 'vitest';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { repairRegionMask } from '../../src/qr/repair-mask.ts';

describe('repairRegionMask', () => {
  const canvas = { width: 256, height: 256 };
  const control = renderControlImage({ content: 'https://example.com', pattern: 's1', canvas, placement: placementFor(canvas, 0.9), background: 'gray' });
  const geometry = { matrix: control.matrix, layout: control.layout };
  const { moduleSize: m, quietZoneModules: q, codeX, codeY } = control.layout;
  const side = control.matrix.size + 2 * q;

  it('covers a changed module and the ring around it fully, fades over the feather, and leaves the rest at 0', () => {
    const changed = new Uint8Array(side * side);
    const r = 10;
    const c = 12;
    changed[r * side + c] = 1;
    const mask = repairRegionMask(geometry, changed, canvas.width, canvas.height, { growModules: 1, feather: 0.5 });
    const at = (row: number, col: number, dx = 0.5, dy = 0.5) => mask[Math.floor(codeY + (row - q + dy) * m) * canvas.width + Math.floor(codeX + (col - q + dx) * m)]!;
    expect(at(r, c)).toBeCloseTo(1, 5);
    expect(at(r - 1, c - 1)).toBeCloseTo(1, 5); // the grown ring
    expect(at(r + 1, c + 1)).toBeCloseTo(1, 5);
    expect(at(r + 3, c)).toBe(0); // two modules beyond the ring
    expect(at(r, c - 5)).toBe(0);
    // Across the ring's outer edge the weight falls from 1 to 0, not in one step.
    const edgeY = Math.floor(codeY + (r - q) * m + m / 2);
    const edgeX = Math.floor(codeX + (c + 2 - q) * m); // first pixel past the ring
    expect(mask[edgeY * canvas.width + edgeX - 1]).toBeCloseTo(1, 5); // the ring's own pixels are whole
    const ramp = Array.from({ length: m }, (_, d) => mask[edgeY * canvas.width + edgeX + d]!);
    expect(ramp.some((w) => w > 0.05 && w < 0.95)).toBe(true);
    for (let i = 1; i < ramp.length; i++) expect(ramp[i]!).toBeLessThanOrEqual(ramp[i - 1]! + 1e-6);
  });

  it('is all zero when nothing changed, and refuses a mask of the wrong size', () => {
    expect(repairRegionMask(geometry, new Uint8Array(side * side), canvas.width, canvas.height).every((w) => w === 0)).toBe(true);
    expect(() => repairRegionMask(geometry, new Uint8Array(side * side - 1), canvas.width, canvas.height)).toThrow(/changedMask/);
  });
});
