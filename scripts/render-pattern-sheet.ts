/**
 * Writes docs/patterns.png: the 18 qrCodePartern values side by side (rows = families,
 * columns = variants), each rendering the same content. Run: npx tsx scripts/render-pattern-sheet.ts
 */
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp, { type OverlayOptions } from 'sharp';
import { renderControlImage } from '../src/qr/control-image.ts';
import { PATTERN_STYLES, type ModuleShape } from '../src/qr/patterns.ts';
import { QR_CODE_PATTERNS } from '../src/workflows/catalogue.ts';
import { sheetText } from './sheet-text.ts';

const CONTENT = 'https://example.com/qr-art';
const CELL = 300;
const GAP = 24;
const LABEL = 44;
const TITLE = 64;
const COLUMNS = 3;
const ROWS = QR_CODE_PATTERNS.length / COLUMNS;

const out = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/patterns.png');
const width = COLUMNS * CELL + (COLUMNS + 1) * GAP;
const height = TITLE + ROWS * (CELL + LABEL + GAP);

function shapeLabel(shape: ModuleShape): string {
  const pct = (f: number): string => `${Math.round(f * 100)}%`;
  switch (shape.kind) {
    case 'square':
      return shape.fill === 1 ? 'squares' : `squares ${pct(shape.fill)}`;
    case 'rounded':
      return `rounded ${pct(shape.fill)}`;
    case 'circle':
      return `${shape.fill < 0.9 ? 'dots' : 'circles'} ${pct(shape.fill)}`;
    case 'liquid':
      return shape.fillet > 0 ? 'liquid + fillets' : 'liquid';
  }
}

const layers: OverlayOptions[] = [
  { input: sheetText(width, TITLE, `qrCodePartern: the 18 patterns (content ${CONTENT})`, 22, 'bold'), left: 0, top: 0 },
];
QR_CODE_PATTERNS.forEach((pattern, index) => {
  const left = GAP + (index % COLUMNS) * (CELL + GAP);
  const top = TITLE + Math.floor(index / COLUMNS) * (CELL + LABEL + GAP);
  const { image } = renderControlImage({
    content: CONTENT,
    pattern,
    canvas: { width: CELL, height: CELL },
    placement: { x: 0, y: 0, side: CELL },
    background: 'white',
  });
  layers.push({ input: Buffer.from(image.data), raw: { width: image.width, height: image.height, channels: image.channels }, left, top });
  layers.push({ input: sheetText(CELL, LABEL, `${pattern}: ${shapeLabel(PATTERN_STYLES[pattern].data)}, ${PATTERN_STYLES[pattern].eye.name} eyes`, 15), left, top: top + CELL });
});

await mkdir(dirname(out), { recursive: true });
await sharp({ create: { width, height, channels: 3, background: '#ffffff' } }).composite(layers).png({ compressionLevel: 9 }).toFile(out);
console.log(`wrote ${out} (${width}x${height})`);
