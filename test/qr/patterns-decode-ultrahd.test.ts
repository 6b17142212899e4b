/** The UltraHD half of patterns-decode.test.ts: every pattern on every UltraHD canvas, whole, at native size. */
import { describe, expect, it } from 'vitest';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { QR_CODE_PATTERNS } from '../../src/workflows/catalogue.ts';
import { ASPECT_RATIOS, OUTPUT_SIZES } from '../../src/workflows/sizes.ts';
import { opencvDecode, zbarDecode } from '../helpers/independent-decoders.ts';

const CONTENT = 'https://example.com/qr-art';

describe.each(ASPECT_RATIOS.map((aspect) => ({ aspect, canvas: OUTPUT_SIZES[aspect].UltraHD })))('$aspect UltraHD ($canvas.width x $canvas.height)', ({ canvas }) => {
  it.each(QR_CODE_PATTERNS)('%s decodes with ZBar and OpenCV', async (pattern) => {
    const { image } = renderControlImage({ content: CONTENT, pattern, canvas, placement: placementFor(canvas, 0.6), background: 'gray' });
    expect(image).toMatchObject({ width: canvas.width, height: canvas.height });
    expect(await zbarDecode(image), 'ZBar').toEqual([CONTENT]);
    expect(await opencvDecode(image), 'OpenCV').toEqual([CONTENT]);
  });
});
