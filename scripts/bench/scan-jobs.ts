/**
 * The seeded job mix of `npm run bench -- scan`: workflows (v4 family, v5, v5s), models, prompts
 * (their colours: light, dark, saturated), patterns, aspect ratios, code sizes and positions,
 * ControlNet strengths and contents (code versions 2 to 10).
 */
import { QR_CODE_PATTERNS, V5_MODELS } from '../../src/workflows/catalogue.ts';
import { ASPECT_RATIOS } from '../../src/workflows/sizes.ts';

const SUBJECTS = ['a koi pond', 'a castle on a hill', 'autumn forest', 'city at night', 'sunflowers', 'ocean waves', 'a fox in snow', 'neon alley', 'desert dunes', 'a bowl of fruit'];
// The demo text encoder colours the art by these words: light, dark and saturated palettes.
const COLOURS = ['red', 'orange', 'yellow', 'green', 'cyan', 'blue', 'purple', 'pink', 'brown', 'white', 'grey', 'black'];
const CONTENTS = [
  'https://example.com',
  'https://qr-art.example/p/8f14e45f',
  'HELLO WORLD 12345',
  'tel:+15551234567',
  'https://shop.example.com/products/winter-jacket?utm_source=qr&utm_medium=print',
  'WIFI:T:WPA;S:Cafe Corner;P:espresso-4-all;;',
  'https://example.org/a/very/long/path/that/makes/the/code/denser?with=query&and=more&params=1234567890',
  'mailto:hello@example.com?subject=QR%20art',
];

export interface Job {
  readonly body: Record<string, unknown>;
  readonly images: number;
}

/** Jobs of 1-4 images until `count` images; about a third v4 family, the rest v5 / v5s (a tenth of those at HD). */
export function benchJobs(count: number, random: () => number): Job[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const between = (a: number, b: number) => Math.round((a + (b - a) * random()) * 100) / 100;
  const out: Job[] = [];
  let left = count;
  for (let i = 0; left > 0; i++) {
    const images = Math.min(left, 1 + Math.floor(random() * 4));
    left -= images;
    const prompt = `${pick(SUBJECTS)}, ${pick(COLOURS)} and ${pick(COLOURS)}`;
    const content = `${pick(CONTENTS)}${random() < 0.5 ? `#${i}` : ''}`;
    const r = random();
    let body: Record<string, unknown>;
    if (r < 0.35) {
      // v4 family: the native canvas, pattern s1, code at 0.8; steps as low as allowed.
      const workflow = pick(['generate_qr_art_v4s', 'generate_qr_art_v4real', 'generate_qr_art_v4niji', 'generate_qr_art_v4dream'] as const);
      body = { workflow, qrText: prompt, qrContent: content, qrStrength: between(0.6, 1.6), qrSteps: 10, batchSize: images };
    } else {
      const workflow = r < 0.7 ? 'generate_qr_art_v5s' : 'generate_qr_art_v5';
      const fast = workflow === 'generate_qr_art_v5s';
      body = {
        workflow,
        prompt,
        qrContent: content,
        steps: fast ? 4 : 10,
        cfg: fast ? between(1, 2.5) : between(4, 8),
        qrStrength: between(0.6, 1.6),
        model: pick(V5_MODELS),
        aspectRatio: pick(ASPECT_RATIOS),
        // HD runs the upscale + refine pass: a few of them, SD for the rest.
        resolution: random() < 0.1 ? 'HD' : 'SD',
        qrCodePartern: pick(QR_CODE_PATTERNS),
        qrRatio: between(0.4, 0.95),
        batchSize: images,
      };
    }
    body.seed = Math.floor(random() * 1e9);
    out.push({ body, images });
  }
  return out;
}
