/**
 * Does a regeneration pass before the luminance repair keep more of the art?
 *   npm run bench -- scan-regen [--images N] [--steps S] [--seed S] [--strength F] [--boost F]
 *
 * Generates N images with the demo graphs in process (v5 settings over a seeded mix of prompts,
 * patterns, code sizes and contents), and for every image the scan guarantee repairs compares:
 *   lum     ensureScannable as the worker runs it (luminance repair only), and
 *   regen   the modules that repair would change, grown by a module and feathered
 *           (qr/repair-mask.ts), redrawn by img2img with a raised control scale
 *           (pipeline/code-regen.ts), then ensureScannable on the result.
 * Per variant: share scannable, mean robustness (share of the capture family read), SSIM against
 * the image as generated (whole image and the code's square), share of pixels changed, time.
 */
import { parseArgs } from 'node:util';
import { wholeNumber } from './usage-error.ts';
import type { RawImage } from '../../src/image/raw.ts';
import { regenerateCode } from '../../src/pipeline/code-regen.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { ensureScannable, passOptions, type GuaranteeResult, type QrGeometry } from '../../src/qr/guarantee.ts';
import { repairModules } from '../../src/qr/repair/index.ts';
import { repairRegionMask } from '../../src/qr/repair-mask.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { QR_CODE_PATTERNS } from '../../src/workflows/catalogue.ts';
import { demoSessions } from '../../test/helpers/demo-sessions.ts';
import { changedShare, ssimWhereChanged } from '../../test/qr/image-metrics.ts';

const { values } = parseArgs({
  options: {
    images: { type: 'string', default: '40' },
    steps: { type: 'string', default: '8' },
    seed: { type: 'string', default: '7' },
    strength: { type: 'string' },
    boost: { type: 'string' },
  },
  allowPositionals: true,
});
const total = wholeNumber('images', values.images, 1);
const steps = wholeNumber('steps', values.steps, 1);
const regenOptions = {
  ...(values.strength !== undefined ? { strength: Number(values.strength) } : {}),
  ...(values.boost !== undefined ? { controlBoost: Number(values.boost) } : {}),
};

const SUBJECTS = ['a koi pond', 'a castle on a hill', 'autumn forest', 'city at night', 'sunflowers', 'ocean waves', 'neon alley', 'desert dunes'];
const COLOURS = ['red', 'orange', 'yellow', 'green', 'cyan', 'blue', 'purple', 'pink', 'brown', 'white', 'grey', 'black'];
const CONTENTS = ['https://example.com', 'https://qr-art.example/p/8f14e45f', 'tel:+15551234567', 'WIFI:T:WPA;S:Cafe Corner;P:espresso-4-all;;', 'https://shop.example.com/products/winter-jacket?utm_source=qr&utm_medium=print'];

interface Variant {
  readonly scannable: boolean;
  readonly robustness: number;
  readonly ssim: number;
  readonly ssimCode: number;
  readonly changed: number;
  readonly ms: number;
}

function variant(original: RawImage, result: GuaranteeResult, square: { x: number; y: number; side: number }, ms: number): Variant {
  const rect = { x: square.x, y: square.y, width: square.side, height: square.side };
  const { whole, inner } = ssimWhereChanged(original, result.image, rect, rect);
  return { scannable: result.scannable, robustness: result.robustness, ssim: whole, ssimCode: inner, changed: changedShare(original, result.image), ms };
}

const sessions = await demoSessions(['vae_encoder']);
const target = sessions.forWorkflow('generate_qr_art_v5', 'universal');
const random = mulberry32(Number(values.seed));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
const rows: Array<{ lum: Variant; regen: Variant }> = [];
let clean = 0;

for (let i = 0; i < total; i++) {
  const canvas = { width: 512, height: 512 };
  const content = pick(CONTENTS);
  const placement = placementFor(canvas, 0.5 + random() * 0.45);
  const control = renderControlImage({ content, pattern: pick(QR_CODE_PATTERNS), canvas, placement, background: 'gray' });
  const request: Txt2ImgRequest = {
    prompt: `${pick(SUBJECTS)}, ${pick(COLOURS)} and ${pick(COLOURS)}`,
    seed: Math.floor(random() * 1e9),
    batchSize: 1,
    steps,
    guidance: 4 + random() * 4,
    scheduler: 'dpmpp_2m_karras',
    control: control.image,
    controlScale: 0.6 + random(),
    controlStart: 0,
    controlEnd: 1,
    width: canvas.width,
    height: canvas.height,
    refine: false,
  };
  const [image] = (await generate(request, target)).images as [RawImage];
  const geometry: QrGeometry = { matrix: control.matrix, layout: control.layout, control: control.image };
  const codeSide = control.layout.codePixels;

  const l0 = performance.now();
  const lum = await ensureScannable(image, content, geometry, 'on_failure', { codeSide });
  const lumMs = performance.now() - l0;
  if (!lum.repaired) {
    clean++;
    continue;
  }
  const r0 = performance.now();
  const firstPass = repairModules(image, geometry, passOptions(1));
  const mask = repairRegionMask(geometry, firstPass.changedMask, image.width, image.height);
  const [redrawn] = (await regenerateCode([{ image, index: 0, mask }], placement, request, target, regenOptions)) as [RawImage];
  const regen = await ensureScannable(redrawn, content, geometry, 'on_failure', { codeSide });
  const regenMs = performance.now() - r0;
  rows.push({ lum: variant(image, lum, placement, lumMs), regen: variant(image, regen, placement, regenMs) });
  process.stderr.write(`\r${i + 1}/${total} generated, ${rows.length} repaired`);
}
process.stderr.write('\n');
await sessions.release();

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const share = (xs: boolean[]) => `${xs.filter(Boolean).length}/${xs.length}`;
console.log(`images ${total}, delivered untouched ${clean}, repaired ${rows.length} (steps ${steps}, regen ${JSON.stringify(regenOptions)})`);
for (const name of ['lum', 'regen'] as const) {
  const v = rows.map((r) => r[name]);
  console.log(
    `${name.padEnd(6)} scannable ${share(v.map((x) => x.scannable))}  robustness ${mean(v.map((x) => x.robustness)).toFixed(3)}  ` +
      `SSIM whole ${mean(v.map((x) => x.ssim)).toFixed(4)} code ${mean(v.map((x) => x.ssimCode)).toFixed(4)}  ` +
      `pixels changed ${(100 * mean(v.map((x) => x.changed))).toFixed(1)}%  ms ${mean(v.map((x) => x.ms)).toFixed(0)}`,
  );
}
