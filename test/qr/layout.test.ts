import { describe, expect, it } from 'vitest';
import { DEFAULT_QUIET_ZONE_MODULES, layoutQr, QrLayoutError } from '../../src/qr/layout.ts';

const canvas = { width: 1024, height: 576 };

describe('layoutQr', () => {
  it('uses the largest whole number of pixels per module that fits code and quiet zone in the square', () => {
    // 33 modules + 2 x 2 quiet = 37 modules in 346 px: 9 px each (37 x 9 = 333, 37 x 10 = 370 too many).
    const layout = layoutQr(canvas, { x: 339, y: 115, side: 346 }, 33, 2);
    expect(layout.moduleSize).toBe(9);
    expect(Number.isInteger(layout.moduleSize)).toBe(true);
    expect(layout.codePixels).toBe(33 * 9);
  });

  it('keeps the quiet zone inside the placed square and centres the code there', () => {
    const placement = { x: 339, y: 115, side: 346 };
    const layout = layoutQr(canvas, placement, 33, 2);
    const quiet = 2 * layout.moduleSize;
    // 346 - 37 x 9 = 13 leftover pixels: 6 before, 7 after.
    expect(layout.codeX).toBe(placement.x + 6 + quiet);
    expect(layout.codeY).toBe(placement.y + 6 + quiet);
    const right = placement.x + placement.side - (layout.codeX + layout.codePixels);
    const bottom = placement.y + placement.side - (layout.codeY + layout.codePixels);
    expect(right).toBe(7 + quiet);
    expect(bottom).toBe(7 + quiet);
    expect(layout.codeX - quiet).toBeGreaterThanOrEqual(placement.x);
    expect(layout.placement).toEqual(placement);
  });

  it('fills the square exactly when it is a multiple of the module count', () => {
    const layout = layoutQr(canvas, { x: 0, y: 0, side: 25 * 20 }, 21, 2);
    expect(layout.moduleSize).toBe(20);
    expect(layout.codeX).toBe(40);
    expect(layout.codeY).toBe(40);
  });

  it('defaults to a 2-module quiet zone and honours another one', () => {
    expect(DEFAULT_QUIET_ZONE_MODULES).toBe(2);
    expect(layoutQr(canvas, { x: 0, y: 0, side: 500 }, 21).quietZoneModules).toBe(2);
    const four = layoutQr(canvas, { x: 0, y: 0, side: 29 * 10 }, 21, 4);
    expect(four.moduleSize).toBe(10);
    expect(four.codeX).toBe(40);
    const none = layoutQr(canvas, { x: 10, y: 20, side: 210 }, 21, 0);
    expect(none.moduleSize).toBe(10);
    expect([none.codeX, none.codeY]).toEqual([10, 20]);
  });

  it('works down to one pixel per module', () => {
    expect(layoutQr(canvas, { x: 0, y: 0, side: 181 }, 177, 2).moduleSize).toBe(1);
  });

  it('refuses a square too small for one pixel per module, saying what to change', () => {
    const attempt = () => layoutQr(canvas, { x: 0, y: 0, side: 173 }, 177, 2);
    expect(attempt).toThrow(QrLayoutError);
    expect(attempt).toThrow(/needs 181 modules/);
    expect(attempt).toThrow(/only 173 px/);
    expect(attempt).toThrow(/qrRatio/);
    expect(attempt).toThrow(/resolution/);
    expect(attempt).toThrow(/shorten qrContent/);
  });

  it('rejects a square that is not whole pixels inside the canvas', () => {
    expect(() => layoutQr(canvas, { x: 700, y: 0, side: 346 }, 21)).toThrow(RangeError);
    expect(() => layoutQr(canvas, { x: 0, y: 300, side: 346 }, 21)).toThrow(RangeError);
    expect(() => layoutQr(canvas, { x: 0.5, y: 0, side: 346 }, 21)).toThrow(RangeError);
    expect(() => layoutQr(canvas, { x: 0, y: 0, side: 346 }, 21, -1)).toThrow(RangeError);
  });
});
