import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceOf } from '../../src/store/accounts.ts';
import { catalogue } from '../../src/workflows/catalogue.ts';
import { serveFiles, type FileServer } from '../helpers/file-server.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';
import { handmadeGif, pngHeaderOnly } from '../image/fixtures.ts';

/**
 * Outpainting through the API with the diffusion worker on the demo models (spec 4.3): an image
 * served on localhost, extended on each side and on all sides, with and without a prompt,
 * one_shot and multi_shots; and the hostile inputs.
 */

const KEY = 'key-outpaint-0123456789abcdef012345678';
const WIDTH = 128;
const HEIGHT = 96;
/** manifest workflows.outpainting.featherPixels: the original is byte-identical beyond this band. */
const FEATHER = 16;

const price = catalogue.outpainting.cost;
if (price.kind !== 'by_type') throw new Error('outpainting is priced by type');

interface Served extends FileServer {
  /** The photo's RGB pixels. */
  original: Buffer;
}

/**
 * A colourful 128x96 PNG (gradients, so any shift or resample would show), a text file named
 * .png, pixel bombs, and a host that answers 503: for the first request of /flaky.png, for every
 * one of /down.png.
 */
async function serve(): Promise<Served> {
  const raw = Buffer.alloc(WIDTH * HEIGHT * 3);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) raw.set([(x * 2) & 255, (y * 2 + 40) & 255, (x + y) & 255], (y * WIDTH + x) * 3);
  }
  const photo = await sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } }).png().toBuffer();
  const server = await serveFiles({
    '/photo.png': photo,
    '/notes.png': Buffer.from('not an image at all\n'),
    '/bomb.png': pngHeaderOnly(50_000, 50_000),
    '/bomb.gif': handmadeGif({ screenW: 60_000, screenH: 60_000, frameW: 60_000, frameH: 60_000 }),
  }, (req, res) => {
    const busy = req.url === '/down.png' || (req.url === '/flaky.png' && !server.requests.slice(0, -1).includes('/flaky.png'));
    if (busy) res.writeHead(503, { 'retry-after': '1' }).end('busy');
    else if (req.url === '/flaky.png') res.writeHead(200, { 'content-type': 'image/png' }).end(photo);
    return busy || req.url === '/flaky.png';
  });
  return { ...server, original: raw };
}

const pad = (left: number, right: number, top: number, bottom: number) => ({ padding_left: left, padding_right: right, padding_top: top, padding_bottom: bottom });

describe('outpainting with the diffusion worker', () => {
  let stack: TestStack;
  let served: Served;
  beforeAll(async () => {
    served = await serve();
    stack = await startTestStack({ worker: true, env: { API_KEYS: `olga:${KEY}:1000` } });
  });
  afterAll(async () => {
    await stack?.stop();
    await served?.close();
  });

  const run = async (body: Record<string, unknown>) => {
    const before = await balanceOf(stack.api.db, 'olga');
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'outpainting', image_width: WIDTH, image_height: HEIGHT, ...body } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const done = await waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${created.body.data.id}`, { key: KEY });
      return got.body.data.status === 'executed' || got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 120_000);
    return { created: created.body.data, done, charged: before - (await balanceOf(stack.api.db, 'olga')) };
  };

  const output = async (done: { output: { images: string[] } }) => {
    expect(done.output.images).toHaveLength(1);
    const png = Buffer.from(await (await fetch(`${stack.baseUrl}${new URL(done.output.images[0]!).pathname}`)).arrayBuffer());
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    return { png, data, width: info.width, height: info.height, channels: info.channels };
  };

  /** The original's pixels at least FEATHER px from every padded side are byte-identical in the output. */
  const expectOriginalKept = (out: { data: Buffer; width: number; channels: number }, p: ReturnType<typeof pad>) => {
    const inset = (padded: number) => (padded > 0 ? FEATHER : 0);
    let compared = 0;
    for (let y = inset(p.padding_top); y < HEIGHT - inset(p.padding_bottom); y++) {
      for (let x = inset(p.padding_left); x < WIDTH - inset(p.padding_right); x++) {
        const o = ((y + p.padding_top) * out.width + x + p.padding_left) * out.channels;
        const s = (y * WIDTH + x) * 3;
        if (out.data[o] !== served.original[s] || out.data[o + 1] !== served.original[s + 1] || out.data[o + 2] !== served.original[s + 2]) {
          throw new Error(`original pixel (${x}, ${y}) changed`);
        }
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(0);
  };

  it.each([
    ['left', pad(64, 0, 0, 0)],
    ['right', pad(0, 40, 0, 0)],
    ['top', pad(0, 0, 48, 0)],
    ['bottom', pad(0, 0, 0, 33)],
  ])('extends the %s side with a prompt (one_shot): exact size, original kept, no caption, one_shot price', async (_, p) => {
    const { done, charged } = await run({ image: `${served.url}/photo.png`, prompt: 'a red and blue abstract painting', type: 'one_shot', seed: 11, ...p });
    expect(done.status, JSON.stringify(done.error)).toBe('executed');
    expect(done.isScanables).toEqual([]);
    expect(done.output).not.toHaveProperty('caption');
    expect(charged).toBe(price.cents.one_shot);
    const out = await output(done);
    expect([out.width, out.height]).toEqual([WIDTH + p.padding_left + p.padding_right, HEIGHT + p.padding_top + p.padding_bottom]);
    expectOriginalKept(out, p);
  });

  it('extends all sides without a prompt (multi_shots): the caption is used and echoed, multi_shots price, same seed same bytes', async () => {
    const p = pad(72, 56, 40, 64);
    const body = { image: `${served.url}/photo.png`, type: 'multi_shots', seed: 5, ...p };
    const first = await run(body);
    expect(first.done.status, JSON.stringify(first.done.error)).toBe('executed');
    expect(first.charged).toBe(price.cents.multi_shots);
    expect(first.done.output.caption).toMatch(/\S/);
    expect(first.done.input).not.toHaveProperty('prompt');
    const out = await output(first.done);
    expect([out.width, out.height]).toEqual([WIDTH + 72 + 56, HEIGHT + 40 + 64]);
    expectOriginalKept(out, p);

    const again = await run(body);
    expect(again.done.output.caption).toBe(first.done.output.caption);
    expect((await output(again.done)).png.equals(out.png)).toBe(true);
  });

  it.each([
    ['a text file named .png', '/notes.png', 'is not a PNG, JPEG, WebP or GIF image'],
    ['a 50,000 x 50,000 PNG header', '/bomb.png', '50000 x 50000 pixels'],
    ['a GIF whose frame claims 60,000 x 60,000', '/bomb.gif', '60000 x 60000 pixels'],
    ['a missing file', '/missing.png', 'HTTP 404'],
  ])('fails %s as invalid_image with a clear message and refunds it', async (_, path, text) => {
    const { done, charged } = await run({ image: `${served.url}${path}`, prompt: 'anything', type: 'one_shot', ...pad(32, 0, 0, 0) });
    expect(done).toMatchObject({ status: 'failed', refunded: true, output: '', error: { code: 'invalid_image' } });
    expect(done.error.message).toMatch(/^image /);
    expect(done.error.message).toContain(text);
    expect(charged).toBe(0);
  });

  it('hands a job back while the image host answers 503 (it runs once the host is back), and fails it as invalid_image on its last attempt', async () => {
    const [flaky, down] = await Promise.all([
      run({ image: `${served.url}/flaky.png`, prompt: 'a harbour', type: 'one_shot', seed: 3, ...pad(32, 0, 0, 0) }),
      run({ image: `${served.url}/down.png`, prompt: 'a harbour', type: 'one_shot', seed: 3, ...pad(32, 0, 0, 0) }),
    ]);
    expect(flaky.done.status, JSON.stringify(flaky.done.error)).toBe('executed');
    expect(served.requests.filter((path) => path === '/flaky.png')).toHaveLength(2);
    expect(down.done).toMatchObject({ status: 'failed', refunded: true, error: { code: 'invalid_image' } });
    expect(down.done.error.message).toContain('HTTP 503');
    // JOB_MAX_DELIVER (3) attempts, the last one failing it with the host's answer.
    expect(served.requests.filter((path) => path === '/down.png')).toHaveLength(3);
  });

  it.each([
    ['padding_left', -1],
    ['padding_top', 100_000],
    ['padding_right', 2.5],
  ])('refuses %s = %s at create time, naming the field, and charges nothing', async (field, value) => {
    const before = await balanceOf(stack.api.db, 'olga');
    const res = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'outpainting', image: `${served.url}/photo.png`, image_width: WIDTH, image_height: HEIGHT, type: 'one_shot', ...pad(8, 8, 8, 8), [field]: value },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain(field);
    expect(await balanceOf(stack.api.db, 'olga')).toBe(before);
  });

  it('refuses all-zero paddings at create time', async () => {
    const res = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'outpainting', image: `${served.url}/photo.png`, image_width: WIDTH, image_height: HEIGHT, type: 'one_shot', ...pad(0, 0, 0, 0) },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('at least one of padding_left');
  });
});

describe('outpainting in production mode (private addresses refused)', () => {
  let stack: TestStack;
  let served: Served;
  beforeAll(async () => {
    served = await serve();
    stack = await startTestStack({ worker: true, env: { API_KEYS: `olga:${KEY}:100`, ALLOW_PRIVATE_URLS: 'false' } });
  });
  afterAll(async () => {
    await stack?.stop();
    await served?.close();
  });

  it('refuses an image on a loopback address at creation: 400 naming image, nothing charged, nothing fetched', async () => {
    const before = await balanceOf(stack.api.db, 'olga');
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'outpainting', image: `${served.url}/photo.png`, image_width: WIDTH, image_height: HEIGHT, type: 'one_shot', ...pad(32, 0, 0, 0) },
    });
    expect(created.status).toBe(400);
    expect(created.body.error.details).toEqual([expect.objectContaining({ field: 'image', rule: 'public_host' })]);
    expect(await balanceOf(stack.api.db, 'olga')).toBe(before);
    expect(served.requests).toEqual([]);
  });
});
