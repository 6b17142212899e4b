/**
 * Every size of the spec's table (4.1.3) through txt2img at the demo model's real native size
 * (768): exactly that size, not stretched (the code's modules land where the control image put
 * them), and refined in tiles without a seam.
 *
 *   distortion   each module's centre in the output is classified dark or light by its own
 *                luminance; a stretch of a few percent moves the modules of a large code off
 *                their centres (checked: the same image stretched 4% fails);
 *   seam         art without a code (qrStrength 0), refined in tiles: how much the luminance step
 *                across each tile edge exceeds the steps around it (checked on a seamed copy).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resizeImage } from '../../src/image/decode.ts';
import type { RawImage } from '../../src/image/raw.ts';
import { toLuma } from '../../src/image/luma.ts';
import type { PipelineSessions, DiffusionModel } from '../../src/pipeline/sessions.ts';
import { canvasTiles, latentTiling } from '../../src/pipeline/tiles.ts';
import { generate, type Txt2ImgRequest } from '../../src/pipeline/txt2img.ts';
import { placementFor, renderControlImage, type ControlImage } from '../../src/qr/control-image.ts';
import { ASPECT_RATIOS, OUTPUT_SIZES, RESOLUTIONS } from '../../src/workflows/sizes.ts';
import { demoSessions } from '../helpers/demo-sessions.ts';

let sessions: PipelineSessions;
let target: DiffusionModel;
beforeAll(async () => {
  sessions = await demoSessions(['vae_encoder']);
  target = sessions.forWorkflow('generate_qr_art_v5', 'universal');
});
afterAll(async () => {
  await sessions?.release();
});

function control(width: number, height: number): ControlImage {
  const canvas = { width, height };
  return renderControlImage({ content: 'https://example.com/sizes', pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray', errorCorrectionLevel: 'H' });
}

const request = (width: number, height: number, c: ControlImage, over: Partial<Txt2ImgRequest> = {}): Txt2ImgRequest => ({
  prompt: 'a blue koi pond',
  seed: 11,
  batchSize: 1,
  steps: 6,
  guidance: 7,
  scheduler: 'dpmpp_2m_karras',
  control: c.image,
  controlScale: 1.5,
  controlStart: 0,
  controlEnd: 1,
  width,
  height,
  ...over,
});

/** Share of modules whose centre (a third of the module, averaged) reads as the matrix says. */
function moduleAgreement(image: RawImage, c: ControlImage): number {
  const luma = toLuma(image).data;
  const { moduleSize, codeX, codeY } = c.layout;
  const { size, dark } = c.matrix;
  const core = Math.max(1, Math.floor(moduleSize / 3));
  const centre = (mx: number, my: number): number => {
    const cx = Math.round(codeX + (mx + 0.5) * moduleSize);
    const cy = Math.round(codeY + (my + 0.5) * moduleSize);
    let sum = 0;
    let n = 0;
    for (let y = cy - core; y <= cy + core; y++) for (let x = cx - core; x <= cx + core; x++) (sum += luma[y * image.width + x]!), n++;
    return sum / n;
  };
  const values = Array.from({ length: size * size }, (_, i) => centre(i % size, Math.floor(i / size)));
  const mean = (pick: (d: number) => boolean) => {
    const v = values.filter((_, i) => pick(dark[i]!));
    return v.reduce((a, b) => a + b, 0) / v.length;
  };
  const threshold = (mean((d) => d === 1) + mean((d) => d === 0)) / 2;
  return values.filter((v, i) => (v < threshold ? 1 : 0) === dark[i]).length / values.length;
}

/**
 * How much a tile edge stands out, in luminance levels: the mean step across each edge (between
 * column x and x+1, or row) minus the median step of the 32 columns (rows) around it. Smooth art
 * steps by a fraction of a level between neighbours; a seam steps by several.
 */
function seamStep(image: RawImage, boundaries: readonly number[], axis: 'x' | 'y'): number {
  const luma = toLuma(image).data;
  const { width, height } = image;
  const n = axis === 'x' ? width - 1 : height - 1;
  const len = axis === 'x' ? height : width;
  const step = (i: number): number => {
    let sum = 0;
    for (let j = 0; j < len; j++) {
      const [a, b] = axis === 'x' ? [luma[j * width + i]!, luma[j * width + i + 1]!] : [luma[i * width + j]!, luma[(i + 1) * width + j]!];
      sum += Math.abs(a - b);
    }
    return sum / len;
  };
  const excess = boundaries
    .filter((b) => b >= 0 && b < n)
    .map((b) => {
      const around = [];
      for (let i = Math.max(0, b - 16); i <= Math.min(n - 1, b + 16); i++) if (Math.abs(i - b) > 1) around.push(step(i));
      around.sort((x, y) => x - y);
      return step(b) - around[Math.floor(around.length / 2)]!;
    });
  return excess.reduce((a, b) => a + b, 0) / excess.length;
}

/** Tile edges of a refinement at `refined`, in output pixels along one axis. */
function tileEdges(refined: { width: number; height: number }, output: { width: number; height: number }, axis: 'x' | 'y'): number[] {
  const grid = canvasTiles(refined.width / 8, refined.height / 8, latentTiling(768))!;
  const scale = axis === 'x' ? output.width / refined.width : output.height / refined.height;
  const edges = new Set<number>();
  for (const t of grid.tiles) {
    const [start, len, full] = axis === 'x' ? [t.x, t.width, grid.width] : [t.y, t.height, grid.height];
    if (start > 0) edges.add(Math.round(start * 8 * scale) - 1);
    if (start + len < full) edges.add(Math.round((start + len) * 8 * scale) - 1);
  }
  return [...edges];
}

describe('every size of the spec table', () => {
  for (const aspect of ASPECT_RATIOS) {
    for (const resolution of RESOLUTIONS) {
      const { width, height } = OUTPUT_SIZES[aspect][resolution];
      it(`${aspect} ${resolution}: exactly ${width}x${height}, the code's modules where the control put them`, async () => {
        const c = control(width, height);
        const r = await generate(request(width, height, c), target);
        expect([r.images[0]!.width, r.images[0]!.height]).toEqual([width, height]);
        // The generation and refinement canvases have exactly the output's aspect (no crop needed for the table's sizes).
        expect(r.generated.width * height).toBe(r.generated.height * width);
        if (r.refined) expect(r.refined.width * height).toBe(r.refined.height * width);
        expect(moduleAgreement(r.images[0]!, c)).toBeGreaterThan(0.93);
      }, 60_000);
    }
  }

  it('the module check sees a 5% stretch, the size of the old rounding\'s (it can fail)', async () => {
    for (const { width, height } of [OUTPUT_SIZES['16:9'].UltraHD, OUTPUT_SIZES['3:4'].HD]) {
      const c = control(width, height);
      const r = await generate(request(width, height, c), target);
      const wide = await resizeImage(r.images[0]!, Math.round(width * 1.05), height, 'fill');
      const stretched = await resizeImage(wide, width, height, 'cover');
      expect(moduleAgreement(r.images[0]!, c)).toBeGreaterThan(0.93);
      expect(moduleAgreement(stretched, c)).toBeLessThan(0.85);
    }
  }, 60_000);

  it('tiled refinement leaves no seam at the tile edges (FullHD and UltraHD art without a code)', async () => {
    for (const { width, height } of [OUTPUT_SIZES['1:1'].FullHD, OUTPUT_SIZES['16:9'].UltraHD, OUTPUT_SIZES['3:4'].UltraHD]) {
      const r = await generate(request(width, height, control(width, height), { controlScale: 0, prompt: 'a red and yellow sunset' }), target);
      expect(r.refined!.tiles).toBeGreaterThan(1);
      for (const axis of ['x', 'y'] as const) {
        const edges = tileEdges(r.refined!, { width, height }, axis);
        expect(edges.length, `${width}x${height} ${axis}`).toBeGreaterThan(0);
        expect(seamStep(r.images[0]!, edges, axis), `${width}x${height} ${axis}`).toBeLessThan(0.5);
      }
    }
  }, 120_000);

  it('the seam measure sees a seam (it can fail)', async () => {
    const { width, height } = OUTPUT_SIZES['1:1'].FullHD;
    const r = await generate(request(width, height, control(width, height), { controlScale: 0, prompt: 'a red and yellow sunset' }), target);
    const seamed = { ...r.images[0]!, data: Uint8Array.from(r.images[0]!.data) };
    const edges = tileEdges(r.refined!, { width, height }, 'x');
    // Brighten everything right of the first tile edge by 4 levels: a barely visible seam.
    for (let y = 0; y < height; y++) for (let x = edges[0]! + 1; x < width; x++) for (let k = 0; k < 3; k++) seamed.data[(y * width + x) * 3 + k] = Math.min(255, seamed.data[(y * width + x) * 3 + k]! + 4);
    expect(seamStep(seamed, edges.slice(0, 1), 'x')).toBeGreaterThan(2);
  }, 60_000);
});
