/**
 * Outpainting on the demo graphs (CPU, small sizes, few steps): exact output sizes for every
 * side, the client's pixels kept byte for byte outside the seam feather, seeds, captions,
 * passes, progress and abort, the plan's geometry, the NSFW check, and refusals of bad input.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoSessions } from '../helpers/demo-sessions.ts';
import { containsRect } from '../../src/image/canvas.ts';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { checkOutpaintRequest, outpaint, outpaintPlan, type OutpaintRequest } from '../../src/pipeline/outpaint.ts';
import { planOutpaint, type Padding } from '../../src/pipeline/outpaint-plan.ts';
import { type OutpaintModel, type PipelineSessions } from '../../src/pipeline/sessions.ts';

const FEATHER = 16; // the shipped manifest's featherPixels

let sessions: PipelineSessions;
let target: OutpaintModel;

beforeAll(async () => {
  sessions = await demoSessions();
  target = sessions.forOutpainting();
});

afterAll(async () => {
  await sessions?.release();
});

/** A 96×72 picture: warm on the left, cool on the right, a darker band across; every byte depends on its place. */
function picture(width = 96, height = 72): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = x / (width - 1);
      const band = Math.abs(y - height / 2) < height / 8 ? 0.6 : 1;
      data.set([Math.round((220 - 180 * t) * band), Math.round(90 + 50 * Math.sin(y / 7) + (x % 3)), Math.round((40 + 180 * t) * band)], (y * width + x) * 3);
    }
  }
  return rawImage(data, width, height, 3);
}

const IMAGE = picture();
const QUICK = { steps: 4 } as const;

function request(padding: Partial<Padding>, over: Partial<OutpaintRequest> = {}): OutpaintRequest {
  return {
    image: IMAGE,
    padding: { left: 0, right: 0, top: 0, bottom: 0, ...padding },
    type: 'one_shot',
    prompt: 'a blue lake',
    seed: 42,
    tuning: QUICK,
    ...over,
  };
}

const pixel = (im: RawImage, x: number, y: number): number[] => Array.from(im.data.subarray((y * im.width + x) * 3, (y * im.width + x) * 3 + 3));

/** Pixels of the original region that differ from the input: [inside the feather band, beyond it]. */
function originalChanges(result: RawImage, image: RawImage, padding: Padding): { inBand: number; beyond: number } {
  let inBand = 0;
  let beyond = 0;
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      const d = Math.min(
        padding.left > 0 ? x : Infinity,
        padding.right > 0 ? image.width - 1 - x : Infinity,
        padding.top > 0 ? y : Infinity,
        padding.bottom > 0 ? image.height - 1 - y : Infinity,
      );
      if (pixel(result, padding.left + x, padding.top + y).join() === pixel(image, x, y).join()) continue;
      if (d < FEATHER) inBand++;
      else beyond++;
    }
  }
  return { inBand, beyond };
}

/** Bytes of the new border only (everything outside the original's rectangle). */
function borderBytes(result: RawImage, padding: Padding, image: RawImage = IMAGE): Buffer {
  const out: number[] = [];
  for (let y = 0; y < result.height; y++) {
    for (let x = 0; x < result.width; x++) {
      const inside = x >= padding.left && x < padding.left + image.width && y >= padding.top && y < padding.top + image.height;
      if (!inside) out.push(...pixel(result, x, y));
    }
  }
  return Buffer.from(out);
}

describe('output size and the original pixels', () => {
  const cases: [string, Partial<Padding>][] = [
    ['left', { left: 40 }],
    ['right', { right: 37 }],
    ['top', { top: 24 }],
    ['bottom', { bottom: 19 }],
    ['all sides', { left: 13, right: 30, top: 21, bottom: 8 }],
  ];
  for (const [name, pad] of cases) {
    it(`${name}: exactly (w + left + right) × (h + top + bottom), original byte-identical outside the feather`, async () => {
      const r = await outpaint(request(pad), target);
      const p = { left: 0, right: 0, top: 0, bottom: 0, ...pad };
      expect([r.image.width, r.image.height, r.image.channels]).toEqual([IMAGE.width + p.left + p.right, IMAGE.height + p.top + p.bottom, 3]);
      const changes = originalChanges(r.image, IMAGE, p);
      expect(changes.beyond).toBe(0);
      expect(changes.inBand).toBeGreaterThan(0); // the seam is blended, not a hard cut
      expect(r.passes).toBe(1);
      expect(r.caption).toBeUndefined();
      expect(r.prompt).toBe('a blue lake');
    });
  }

  it('odd sizes round up for the model and come back exact (the rounding is cropped, never resampled)', async () => {
    const image = picture(67, 65);
    const pad = { left: 0, right: 9, top: 3, bottom: 0 };
    const r = await outpaint({ ...request(pad), image }, target);
    expect([r.image.width, r.image.height]).toEqual([76, 68]);
    expect([r.working.width % 8, r.working.height % 8]).toEqual([0, 0]);
    expect(originalChanges(r.image, image, pad).beyond).toBe(0);
  });

  it('a canvas above maxPixels is painted scaled down and resized back, still exact and byte-identical', async () => {
    const pad = { left: 48, right: 48, top: 24, bottom: 24 };
    const r = await outpaint(request(pad, { tuning: { ...QUICK, maxPixels: 96 * 64 } }), target);
    expect(r.working.width * r.working.height).toBeLessThan(192 * 120);
    expect([r.image.width, r.image.height]).toEqual([192, 120]);
    expect(originalChanges(r.image, IMAGE, pad).beyond).toBe(0);
  });

  it('a padding of one pixel on a canvas painted scaled down is painted too: its border follows the seed', async () => {
    // 201×151 is above maxPixels: painted at about 0.37 of its size, where one pixel rounds to none.
    const image = picture(200, 150);
    const pad = { left: 0, right: 1, top: 0, bottom: 1 };
    const tuning = { ...QUICK, maxPixels: 64 * 64 };
    const plan = outpaintPlan(request(pad, { image, tuning }), target);
    expect(plan.back).toBe('resize');
    expect(plan.working.width - (plan.originalInWorking.x + plan.originalInWorking.width)).toBeGreaterThanOrEqual(8);
    expect(plan.working.height - (plan.originalInWorking.y + plan.originalInWorking.height)).toBeGreaterThanOrEqual(8);
    const [a, b] = [await outpaint(request(pad, { image, tuning }), target), await outpaint(request(pad, { image, tuning, seed: 43 }), target)];
    const p = { left: 0, right: 1, top: 0, bottom: 1 };
    expect(borderBytes(a.image, p, image).equals(borderBytes(b.image, p, image))).toBe(false);
    expect([a.image.width, a.image.height]).toEqual([201, 151]);
    expect(originalChanges(a.image, image, p).beyond).toBe(0);
  });
});

describe('what the border looks like on the demo graphs', () => {
  it('continues the image smoothly: next to the seam it matches the edge, and it is not noise', async () => {
    const pad = { left: 48, right: 48, top: 0, bottom: 0 };
    const r = await outpaint(request(pad, { prompt: 'a painting' }), target);
    // Just outside the left and right edges, the colour is close to the edge column's.
    for (const [outside, edge] of [
      [pad.left - 2, pad.left + 20],
      [pad.left + IMAGE.width + 1, pad.left + IMAGE.width - 21],
    ] as const) {
      let diff = 0;
      for (let y = 0; y < IMAGE.height; y++) diff += pixel(r.image, outside, y).reduce((s, v, c) => s + Math.abs(v - pixel(r.image, edge, y)[c]!), 0) / 3;
      expect(diff / IMAGE.height, `column ${outside}`).toBeLessThan(30);
    }
    // Smooth: neighbouring border pixels differ by a few levels on average (white noise: ~85).
    let step = 0;
    let n = 0;
    for (let y = 0; y < r.image.height; y++) {
      for (let x = 1; x < pad.left; x++) {
        step += pixel(r.image, x, y).reduce((s, v, c) => s + Math.abs(v - pixel(r.image, x - 1, y)[c]!), 0) / 3;
        n++;
      }
    }
    expect(step / n).toBeLessThan(4);
  });
});

describe('seeds', () => {
  const pad = { left: 32, bottom: 24 };
  it('the same seed gives the same bytes; another seed another border', async () => {
    const a = await outpaint(request(pad), target);
    const b = await outpaint(request(pad), target);
    expect(Buffer.from(a.image.data).equals(Buffer.from(b.image.data))).toBe(true);
    const c = await outpaint(request(pad, { seed: 43 }), target);
    const p = { left: 32, right: 0, top: 0, bottom: 24 };
    expect(borderBytes(c.image, p).equals(borderBytes(a.image, p))).toBe(false);
    expect(originalChanges(c.image, IMAGE, p).beyond).toBe(0);
  });
});

describe('caption', () => {
  it('without a prompt the captioner describes the image, and that text is the prompt; deterministic', async () => {
    const blue = rawImage(new Uint8Array(80 * 64 * 3).map((_, i) => [26, 51, 217][i % 3]!), 80, 64, 3);
    const a = await outpaint({ ...request({ right: 32 }), image: blue, prompt: undefined }, target);
    expect(a.caption).toBe('a blue abstract painting');
    expect(a.prompt).toBe(a.caption);
    const b = await outpaint({ ...request({ right: 32 }), image: blue, prompt: '   ' }, target);
    expect(b.caption).toBe(a.caption);
    expect(Buffer.from(b.image.data).equals(Buffer.from(a.image.data))).toBe(true);
    expect(a.timings.caption).toBeGreaterThan(0);
    const prompted = await outpaint({ ...request({ right: 32 }), image: blue }, target);
    expect(prompted.caption).toBeUndefined();
    expect(prompted.timings.caption).toBeUndefined();
  });
});

describe('one_shot and multi_shots', () => {
  const pad = { left: 64, right: 64, top: 16, bottom: 40 };

  it('multi_shots grows the border in more passes than one_shot, each pass reporting its steps', async () => {
    const one: [number, number][] = [];
    const multi: [number, number][] = [];
    const r1 = await outpaint(request(pad), target, (s, t) => one.push([s, t]));
    const rm = await outpaint(request(pad, { type: 'multi_shots', tuning: { ...QUICK, passPixels: 24 } }), target, (s, t) => multi.push([s, t]));
    expect(r1.passes).toBe(1);
    expect(rm.passes).toBeGreaterThan(1);
    expect(one).toEqual(Array.from({ length: 4 }, (_, i) => [i + 1, 4]));
    expect(multi).toEqual(Array.from({ length: 4 * rm.passes }, (_, i) => [i + 1, 4 * rm.passes]));
    expect([rm.image.width, rm.image.height]).toEqual([r1.image.width, r1.image.height]);
    expect(originalChanges(rm.image, IMAGE, { ...pad }).beyond).toBe(0);
  });

  it('uses the manifest steps per type: one_shot fewer than multi_shots', () => {
    const s = target.resolved.settings;
    expect(s.steps).toBeLessThan(s.multiShots.steps);
    const { tuning: _quick, ...manifestDefaults } = request(pad, { type: 'multi_shots' });
    const plan = outpaintPlan(manifestDefaults, target);
    expect(plan.passes.length).toBeGreaterThanOrEqual(2);
  });
});

describe('abort and progress', () => {
  it('stops between steps when the signal fires, with the signal reason', async () => {
    const ac = new AbortController();
    const seen: number[] = [];
    const run = outpaint(request({ left: 32 }, { tuning: { steps: 10 } }), target, (step) => {
      seen.push(step);
      if (step === 3) ac.abort(new Error('cancelled by test'));
    }, ac.signal);
    await expect(run).rejects.toThrow(/cancelled by test/);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('an already aborted signal stops before any model runs', async () => {
    const ac = new AbortController();
    ac.abort(new Error('too late'));
    const seen: number[] = [];
    await expect(outpaint(request({ left: 32 }), target, (s) => seen.push(s), ac.signal)).rejects.toThrow(/too late/);
    expect(seen).toEqual([]);
  });
});

describe('NSFW check', () => {
  it('runs on the output: the demo checker flags a magenta picture, not the test picture', async () => {
    const magenta = rawImage(new Uint8Array(64 * 64 * 3).map((_, i) => [242, 26, 230][i % 3]!), 64, 64, 3);
    const flagged = await outpaint({ ...request({ left: 16 }), image: magenta }, target);
    expect(flagged.nsfw).toBe(true);
    const clean = await outpaint(request({ left: 16 }), target);
    expect(clean.nsfw).toBe(false);
    expect(clean.timings.nsfw).toBeGreaterThan(0);
  });
});

describe('the plan', () => {
  const opts = { sizeMultiple: 8, maxPixels: 768 * 768 };

  it('one_shot: one pass over the whole working canvas; rounding goes to a padded side', () => {
    const p = planOutpaint({ width: 100, height: 60 }, { left: 13, right: 0, top: 0, bottom: 0 }, opts);
    expect(p.output).toEqual({ width: 113, height: 60 });
    expect(p.working).toEqual({ width: 120, height: 64 });
    expect(p.back).toBe('crop');
    // Width: 7 extra columns on the left (the padded side); height: 4 extra rows at the bottom.
    expect(p.outputInWorking).toEqual({ x: 7, y: 0, width: 113, height: 60 });
    expect(p.originalInWorking).toEqual({ x: 20, y: 0, width: 100, height: 60 });
    expect(p.passes).toEqual([{ x: 0, y: 0, width: 120, height: 64 }]);
  });

  it('multi_shots: ≥ 2 growing passes of whole latents, each extending at most passPixels (when maxPasses allows)', () => {
    const p = planOutpaint({ width: 512, height: 512 }, { left: 256, right: 256, top: 128, bottom: 128 }, { ...opts, multi: { passPixels: 96, maxPasses: 8 } });
    expect(p.back).toBe('resize'); // 1024×768 is above 768² × 1.05
    expect(p.passes.length).toBeGreaterThanOrEqual(3);
    let prev = p.originalInWorking;
    for (const rect of p.passes) {
      expect(rect.width % 8).toBe(0);
      expect(rect.height % 8).toBe(0);
      expect(containsRect(rect, prev)).toBe(true);
      expect(prev.x - rect.x).toBeLessThanOrEqual(96 + 8);
      expect(rect.x + rect.width - (prev.x + prev.width)).toBeLessThanOrEqual(96 + 8);
      prev = rect;
    }
    expect(p.passes.at(-1)).toEqual({ x: 0, y: 0, ...p.working });
    const capped = planOutpaint({ width: 512, height: 512 }, { left: 256, right: 256, top: 128, bottom: 128 }, { ...opts, multi: { passPixels: 8, maxPasses: 4 } });
    expect(capped.passes).toHaveLength(4);
    // A border of up to two latent rows is one pass even for multi_shots: so is any padding under
    // 16 px, which the working canvas's rounding makes 16 px (200 + 10 -> 216).
    const multi = { ...opts, multi: { passPixels: 96, maxPasses: 8 } };
    expect(planOutpaint({ width: 64, height: 64 }, { left: 8, right: 0, top: 0, bottom: 0 }, multi).passes).toHaveLength(1);
    for (const right of [10, 15, 16]) expect(planOutpaint({ width: 200, height: 100 }, { left: 0, right, top: 0, bottom: 0 }, multi).passes).toHaveLength(1);
    // Also where the canvas's rounding adds more than the padding's own (500 + 12 -> 512, 333 + 12 -> 352).
    expect(planOutpaint({ width: 500, height: 333 }, { left: 0, right: 12, top: 0, bottom: 12 }, multi).passes).toHaveLength(1);
    expect(planOutpaint({ width: 99, height: 99 }, { left: 15, right: 15, top: 15, bottom: 15 }, multi).passes).toHaveLength(1);
    expect(planOutpaint({ width: 200, height: 100 }, { left: 0, right: 17, top: 0, bottom: 0 }, multi).passes).toHaveLength(2);
  });
});

describe('refusals (the API checks these first; the pipeline repeats them for direct callers)', () => {
  const bad: [string, Partial<OutpaintRequest> | { padding: Padding }, RegExp][] = [
    ['negative padding', { padding: { left: -1, right: 0, top: 0, bottom: 10 } }, /padding left must be an integer in \[0, 2048\], got -1/],
    ['huge padding', { padding: { left: 100000, right: 0, top: 0, bottom: 0 } }, /padding left must be an integer in \[0, 2048\], got 100000/],
    ['fractional padding', { padding: { left: 1.5, right: 0, top: 0, bottom: 0 } }, /padding left/],
    ['no padding at all', { padding: { left: 0, right: 0, top: 0, bottom: 0 } }, /at least one padding must be greater than 0/],
    ['a canvas over the largest output', { image: picture(2048, 64), padding: { left: 2048, right: 0, top: 0, bottom: 0 } }, /the outpainted canvas would be 4096x64/],
    ['a tiny image', { image: picture(32, 32) }, /image must be 64\.\.2048/],
    ['a bad seed', { seed: -5 }, /seed must be an integer/],
    ['a bad type', { type: 'three_shots' as never }, /type must be one of one_shot, multi_shots/],
  ];
  for (const [name, over, message] of bad) {
    it(name, async () => {
      const r = { ...request({ left: 16 }), ...over } as OutpaintRequest;
      expect(() => checkOutpaintRequest(r)).toThrow(message);
      await expect(outpaint(r, target)).rejects.toThrow(message);
    });
  }
});
