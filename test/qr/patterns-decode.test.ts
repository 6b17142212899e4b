/**
 * Every qrCodePartern at every output size decodes, with two decoders nobody here wrote
 * (ZBar and OpenCV), to exactly the content: each whole canvas, at native size.
 *
 * Cost, on one core of the build machine: OpenCV takes about 0.15 s per SD canvas and 1.6 s per
 * UltraHD one (ZBar 0.04 and 0.3 s), so the 360 canvases take about four minutes. Crops around
 * the code would be faster but are not equivalent: OpenCV picks its detection path from the
 * code's share of the image (a crop flipped 5 of 360 results), so it sees whole canvases.
 */
import { describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/image/raw.ts';
import { placementFor, renderControlImage, type ControlBackground, type ControlImage } from '../../src/qr/control-image.ts';
import { QR_CODE_PATTERNS, type QrCodePattern } from '../../src/workflows/catalogue.ts';
import { ASPECT_RATIOS, OUTPUT_SIZES, RESOLUTIONS } from '../../src/workflows/sizes.ts';
import { opencvDecode, zbarDecode } from '../helpers/independent-decoders.ts';

const CONTENT = 'https://example.com/qr-art';
// UltraHD canvases are decoded in patterns-decode-ultrahd.test.ts, so vitest runs both halves at once.
const SIZES = ASPECT_RATIOS.flatMap((aspect) =>
  RESOLUTIONS.filter((resolution) => resolution !== 'UltraHD').map((resolution) => ({ aspect, resolution, canvas: OUTPUT_SIZES[aspect][resolution] })),
);

function render(pattern: QrCodePattern, canvas: { width: number; height: number }, background: ControlBackground, content = CONTENT, qrRatio = 0.6): ControlImage {
  return renderControlImage({ content, pattern, canvas, placement: placementFor(canvas, qrRatio), background });
}

async function expectBothRead(image: RawImage, content: string): Promise<void> {
  expect(await zbarDecode(image), 'ZBar').toEqual([content]);
  expect(await opencvDecode(image), 'OpenCV').toEqual([content]);
}

describe.each(SIZES)('$aspect $resolution ($canvas.width x $canvas.height)', ({ canvas }) => {
  it.each(QR_CODE_PATTERNS)('%s decodes with ZBar and OpenCV', async (pattern) => {
    await expectBothRead(render(pattern, canvas, 'gray').image, CONTENT);
  });
});

describe('on a white background', () => {
  it.each(QR_CODE_PATTERNS)('%s decodes with ZBar and OpenCV at SD 16:9', async (pattern) => {
    await expectBothRead(render(pattern, OUTPUT_SIZES['16:9'].SD, 'white').image, CONTENT);
  });
});

describe('a long content (version 20) at SD', () => {
  // 366 bytes at level H is version 20: 97 modules, 7 px each across the whole 768 px canvas.
  // OpenCV.js misses some dense codes whatever the style (even the qrcode package's own
  // plain rendering), depending on the data bits; this is an ordinary long link that the
  // plain code (s1) reads, so a miss here is the pattern's fault.
  const content =
    'https://shop.example.com/checkout/return?order=4815162342&customer=ada.lovelace%40example.org' +
    '&items=sku-1001x2,sku-2002x1,sku-3003x4&coupon=SPRING-2025-QRART&ref=poster-campaign-paris-metro' +
    '&lang=fr-FR&currency=EUR&total=149.90&utm_source=qr&utm_medium=print&utm_campaign=spring_launch&sig=8f14e45fceea167a5a36dedd4bea2543' +
    '&session=7c9e6679-7425-40de-944b-e07fc1f90ae7';
  const canvas = OUTPUT_SIZES['1:1'].SD;

  it('is version 20 or more', () => {
    expect(render('s1', canvas, 'gray', content, 1).matrix.version).toBeGreaterThanOrEqual(20);
  });

  it.each(QR_CODE_PATTERNS)('%s decodes with ZBar and OpenCV', async (pattern) => {
    await expectBothRead(render(pattern, canvas, 'gray', content, 1).image, content);
  });
});
