/**
 * What the family verdict costs per image (`npm run bench -- scan --timing`): the scan check
 * plus COUNT captures decoded by ZXing, ZBar and Java ZXing, on plain control images (which pass, so every
 * capture runs) and on an unreadable canvas (which stops early), at SD 512 and 768 and at 2048.
 */
import { familyVerdict } from '../../src/qr/robustness.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { rawImage } from '../../src/image/raw.ts';
import { summarize } from './scan-check.ts';

const CONTENT = 'https://qr-art.example/p/8f14e45f';

export async function benchVerdictTiming(runs = 5): Promise<void> {
  const rows: Array<Record<string, string>> = [];
  for (const side of [512, 768, 2048]) {
    const canvas = { width: side, height: side };
    const control = renderControlImage({ content: CONTENT, pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray' });
    const square = control.layout.placement;
    const modules = square.side / control.layout.moduleSize;
    const options = { codeSide: control.layout.codePixels, modules };
    const flat = rawImage(new Uint8Array(side * side).fill(128), side, side, 1);
    for (const [name, image, quick] of [['readable, every capture', control.image, false], ['unreadable, stops early', flat, true]] as const) {
      await familyVerdict(image, CONTENT, square, options); // warm-up: wasm, JIT
      const ms: number[] = [];
      let captures = 0;
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const verdict = await familyVerdict(image, CONTENT, square, { ...options, stopWhenFailed: quick });
        ms.push(performance.now() - t0);
        captures = verdict.robustness?.captures ?? 0;
      }
      const t = summarize(ms);
      rows.push({ image: `${side}x${side}, code ${square.side} px`, case: name, captures: String(captures), 'median ms': t.medianMs.toFixed(0), 'p95 ms': t.p95Ms.toFixed(0) });
    }
  }
  console.table(rows);
}
