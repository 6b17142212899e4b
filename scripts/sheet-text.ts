/**
 * A line of text for the image sheets under docs/ (render-pattern-sheet.ts,
 * render-repair-sheet.ts): an SVG that sharp rasterises and composites, centred in its box.
 */
const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function sheetText(width: number, height: number, body: string, size: number, weight = 'normal'): Buffer {
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
      `<text x="${width / 2}" y="${Math.round(height * 0.62)}" font-family="DejaVu Sans, Arial, sans-serif" font-size="${size}" font-weight="${weight}" text-anchor="middle" fill="#222">${escape(body)}</text></svg>`,
  );
}
