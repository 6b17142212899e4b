/**
 * The calibration behind the verdict's rule (`npm run bench -- scan --calibrate`): plain control
 * images of every pattern with three contents (versions 3, 7, 9) on four canvases, each
 * photographed over the family (the check's seed and two others), and per image how many of the
 * COUNT captures each decoder family (ZXing, ZBar) reads, both read, and either reads. The rule in robustness.ts
 * has to let every plain control image through; the strictest candidates are what this prints.
 * Then whether ZBar reads every one of the spared-pass check's captures of each (guarantee.ts).
 */
import { SPARE_CHECK_COUNT, SPARE_CHECK_SEED, sparedPassHolds } from '../../src/qr/guarantee.ts';
import { captureRobustness, CHECK_SEED, COUNT, MIN_BY_FAMILY, MIN_READ, robustEnough } from '../../src/qr/robustness.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { QR_CODE_PATTERNS } from '../../src/workflows/catalogue.ts';
import { OUTPUT_SIZES } from '../../src/workflows/sizes.ts';

const CONTENTS = [
  'https://example.com/abc',
  'https://shop.example.com/products/winter-jacket?utm_source=qr',
  'https://example.org/a/very/long/path/that/makes/the/code/denser?with=query&and=more&params=1234567890',
];
const CANVASES = [
  { canvas: OUTPUT_SIZES['1:1'].SD, ratio: 0.5 },
  { canvas: OUTPUT_SIZES['16:9'].SD, ratio: 0.9 },
  { canvas: OUTPUT_SIZES['1:1'].FullHD, ratio: 0.6 },
  { canvas: OUTPUT_SIZES['9:16'].HD, ratio: 0.4 },
];

export async function benchCalibration(seeds: readonly number[] = [CHECK_SEED, 2, 3]): Promise<void> {
  const rows: Array<Record<string, string | number>> = [];
  let spareImages = 0;
  let spareHeld = 0;
  for (const seed of seeds) {
    let least = { zxing: COUNT, zbar: COUNT, zxingjava: COUNT, both: COUNT, either: COUNT };
    let images = 0;
    let passing = 0;
    const weakest: string[] = [];
    let layout = 0;
    for (const content of CONTENTS) {
      for (const pattern of QR_CODE_PATTERNS) {
        const { canvas, ratio } = CANVASES[layout++ % CANVASES.length]!;
        const control = renderControlImage({ content, pattern, canvas, placement: placementFor(canvas, ratio), background: 'gray' });
        const modules = control.layout.placement.side / control.layout.moduleSize;
        const r = await captureRobustness(control.image, content, control.layout.placement, { seed, modules });
        images++;
        least = { zxing: Math.min(least.zxing, r.byDecoder.zxing), zbar: Math.min(least.zbar, r.byDecoder.zbar), zxingjava: Math.min(least.zxingjava, r.byDecoder.zxingjava), both: Math.min(least.both, r.byAll), either: Math.min(least.either, r.read) };
        if (robustEnough(r)) passing++;
        if (seed === CHECK_SEED) {
          spareImages++;
          if (await sparedPassHolds(control.image, content, control.layout.placement, { modules })) spareHeld++;
        }
        if (Math.min(r.byDecoder.zxing, r.byDecoder.zbar, r.byDecoder.zxingjava) < COUNT - 1) weakest.push(`v${control.matrix.version} ${pattern} zxing ${r.byDecoder.zxing} zbar ${r.byDecoder.zbar} zxingjava ${r.byDecoder.zxingjava}`);
      }
    }
    rows.push({ seed: seed === CHECK_SEED ? `${seed} (the check's)` : seed, images, 'pass the rule': passing, 'fewest read by ZXing': least.zxing, 'fewest by ZBar': least.zbar, 'fewest by Java ZXing': least.zxingjava, 'fewest by all': least.both, 'fewest by either': least.either });
    if (weakest.length) console.log(`seed ${seed}, images one decoder family misses 2+ captures of: ${weakest.join('; ')}`);
  }
  console.log(`Plain control images under the capture family (${COUNT} captures each; rule: ${MIN_READ} read by any family, ${MIN_BY_FAMILY.zxing} by ZXing, ${MIN_BY_FAMILY.zbar} by ZBar, ${MIN_BY_FAMILY.zxingjava} by Java ZXing):`);
  console.table(rows);
  console.log(`Spared-pass check (${SPARE_CHECK_COUNT} captures, seed ${SPARE_CHECK_SEED}, ZBar must read all): ${spareHeld} of ${spareImages} plain control images pass`);
}
