import { describe, expect, it } from 'vitest';
import { placementFor, renderControlImage, type ControlImage } from '../../src/qr/control-image.ts';
import { ModuleRole } from '../../src/qr/encode.ts';
import { ASPECT_RATIOS, OUTPUT_SIZES, RESOLUTIONS } from '../../src/workflows/sizes.ts';
import { QR_CODE_PATTERNS } from '../../src/workflows/catalogue.ts';

const CONTENT = 'https://example.com/qr-art';
const SIZES = ASPECT_RATIOS.flatMap((aspect) => RESOLUTIONS.map((resolution) => ({ aspect, resolution, ...OUTPUT_SIZES[aspect][resolution] })));

function render(canvas: { width: number; height: number }, background: 'gray' | 'white', pattern: (typeof QR_CODE_PATTERNS)[number] = 's1', qrRatio = 0.6): ControlImage {
  return renderControlImage({ content: CONTENT, pattern, canvas, placement: placementFor(canvas, qrRatio), background });
}

/** Every pixel outside the placed square, as a set of values. */
function valuesOutsideSquare(control: ControlImage): Set<number> {
  const { data, width, height } = control.image;
  const { x, y, side } = control.layout.placement;
  const seen = new Set<number>();
  for (let row = 0; row < height; row++) {
    const inside = row >= y && row < y + side;
    for (let col = 0; col < width; col++) {
      if (inside && col >= x && col < x + side) continue;
      seen.add(data[row * width + col]!);
    }
  }
  return seen;
}

/** Every pixel of the placed square outside the modules (quiet zone and leftover). */
function valuesAroundCode(control: ControlImage): Set<number> {
  const { data, width } = control.image;
  const { placement, codeX, codeY, codePixels } = control.layout;
  const seen = new Set<number>();
  for (let row = placement.y; row < placement.y + placement.side; row++) {
    for (let col = placement.x; col < placement.x + placement.side; col++) {
      if (row >= codeY && row < codeY + codePixels && col >= codeX && col < codeX + codePixels) continue;
      seen.add(data[row * width + col]!);
    }
  }
  return seen;
}

describe('placementFor', () => {
  it('centres a square of round(qrRatio x short side), flooring odd leftovers', () => {
    expect(placementFor({ width: 1024, height: 576 }, 0.6)).toEqual({ x: 339, y: 115, side: 346 });
    expect(placementFor({ width: 768, height: 768 }, 0.6)).toEqual({ x: 153, y: 153, side: 461 });
    expect(placementFor({ width: 2592, height: 3456 }, 1)).toEqual({ x: 0, y: 432, side: 2592 });
  });

  it('keeps qrX / qrY when given, centring only the missing one', () => {
    expect(placementFor({ width: 1024, height: 576 }, 0.5, 0, 10)).toEqual({ x: 0, y: 10, side: 288 });
    expect(placementFor({ width: 1024, height: 576 }, 0.5, 700)).toEqual({ x: 700, y: 144, side: 288 });
  });
});

describe('renderControlImage', () => {
  it.each(SIZES)('is exactly $width x $height, one channel, for $aspect $resolution', ({ width, height }) => {
    const control = render({ width, height }, 'gray');
    expect(control.image.width).toBe(width);
    expect(control.image.height).toBe(height);
    expect(control.image.channels).toBe(1);
    expect(control.image.data.length).toBe(width * height);
    expect(control.matrix.errorCorrectionLevel).toBe('H');
  });

  it('paints #808080 outside the square on gray and #FFFFFF on white, and a pure white quiet zone on both', () => {
    const canvas = OUTPUT_SIZES['16:9'].SD;
    const gray = render(canvas, 'gray');
    const white = render(canvas, 'white');
    expect(valuesOutsideSquare(gray)).toEqual(new Set([0x80]));
    expect(valuesOutsideSquare(white)).toEqual(new Set([0xff]));
    expect(valuesAroundCode(gray)).toEqual(new Set([0xff]));
    expect(valuesAroundCode(white)).toEqual(new Set([0xff]));
    // Inside the code the two backgrounds draw the same pixels.
    expect(Buffer.from(gray.image.data).equals(Buffer.from(white.image.data))).toBe(false);
    const { codeX, codeY, codePixels } = gray.layout;
    for (let row = codeY; row < codeY + codePixels; row += 7) {
      const start = row * canvas.width + codeX;
      expect(Buffer.from(gray.image.data.subarray(start, start + codePixels)).equals(Buffer.from(white.image.data.subarray(start, start + codePixels)))).toBe(true);
    }
  });

  it('draws dark modules black (0) and the finder centre solid', () => {
    const control = render(OUTPUT_SIZES['1:1'].SD, 'gray');
    const { codeX, codeY, moduleSize } = control.layout;
    const centre = (r: number, c: number) => control.image.data[(codeY + r * moduleSize + (moduleSize >> 1)) * control.image.width + codeX + c * moduleSize + (moduleSize >> 1)];
    expect(centre(3, 3)).toBe(0); // pupil
    expect(centre(0, 0)).toBe(0); // ring
    expect(centre(1, 1)).toBe(255); // between ring and pupil
  });

  it('gives the same bytes for the same input, and different bytes for another pattern', () => {
    const canvas = OUTPUT_SIZES['3:4'].HD;
    const a = render(canvas, 'gray', 'r2');
    const b = render(canvas, 'gray', 'r2');
    const c = render(canvas, 'gray', 'd2');
    expect(Buffer.from(a.image.data).equals(Buffer.from(b.image.data))).toBe(true);
    expect(Buffer.from(a.image.data).equals(Buffer.from(c.image.data))).toBe(false);
  });

  it('renders the 18 patterns as 18 different images', () => {
    const canvas = OUTPUT_SIZES['1:1'].SD;
    const images = new Set(QR_CODE_PATTERNS.map((pattern) => Buffer.from(render(canvas, 'white', pattern).image.data).toString('base64')));
    expect(images.size).toBe(18);
  });

  // Decoders read one pixel near each module centre against a local threshold (design notes,
  // section 6): the central third of every module must be clearly on its own side, whatever
  // the shape, from large modules down to a few pixels.
  describe.each([
    { label: '12 px modules', canvas: OUTPUT_SIZES['1:1'].SD, qrRatio: 0.6 },
    { label: '4 px modules', canvas: OUTPUT_SIZES['9:16'].SD, qrRatio: 0.3 },
    { label: '35 px modules', canvas: OUTPUT_SIZES['16:9'].UltraHD, qrRatio: 0.6 },
  ])('with $label', ({ canvas, qrRatio }) => {
    it.each(QR_CODE_PATTERNS)('%s keeps the centre third of every data, timing and format module dark (<= 48) or light (>= 207)', (pattern) => {
      const control = render(canvas, 'gray', pattern, qrRatio);
      const { matrix, layout, image } = control;
      const m = layout.moduleSize;
      const lo = Math.ceil(m / 3 - 0.5), hi = Math.floor((2 * m) / 3 - 0.5); // pixels whose centres lie in the middle third
      const wrong: string[] = [];
      for (let r = 0; r < matrix.size; r++) {
        for (let c = 0; c < matrix.size; c++) {
          const role = matrix.role[r * matrix.size + c];
          // Finders and alignment patterns are drawn as whole shapes (a round pupil leaves its corner modules light); decoders find them by their runs, not by sampling.
          if (role === ModuleRole.Finder || role === ModuleRole.Alignment) continue;
          const dark = matrix.dark[r * matrix.size + c] === 1;
          for (let y = lo; y <= hi; y++) {
            for (let x = lo; x <= hi; x++) {
              const v = image.data[(layout.codeY + r * m + y) * image.width + layout.codeX + c * m + x]!;
              if (dark ? v > 48 : v < 207) wrong.push(`(${r},${c}) px ${x},${y} = ${v}`);
            }
          }
        }
      }
      expect(m).toBeGreaterThan(0);
      expect(wrong.slice(0, 5)).toEqual([]);
    });
  });
});
