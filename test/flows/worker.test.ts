import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import QRCode from 'qrcode';
import sharp from 'sharp';
import { connectQueue, type Queue } from '../../src/queue/connection.ts';
import { CONSUMERS, STREAMS } from '../../src/queue/subjects.ts';
import { balanceOf } from '../../src/store/accounts.ts';
import { serveFiles, type FileServer } from '../helpers/file-server.ts';
import { zbarDecode } from '../helpers/independent-decoders.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';
import { pngHeaderOnly } from '../image/fixtures.ts';
import { minimalBody } from '../workflows/helpers.ts';

/** The real worker daemon (control-image runner) behind the API, and what happens when no worker finishes a job. */

const KEY = 'key-worker-0123456789abcdef0123456789a';

describe('with the control-image pipeline (the QR layer end to end, no models)', () => {
  let stack: TestStack;
  let images: FileServer;
  beforeAll(async () => {
    images = await serveImages();
    stack = await startTestStack({ worker: true, env: { API_KEYS: `wes:${KEY}:100`, WORKER_PIPELINE: 'control-image' } });
  });
  afterAll(async () => {
    await stack?.stop();
    await images?.close();
  });

  const create = async (body: Record<string, unknown>) => {
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body });
    expect(created.status).toBe(200);
    return created.body.data as { id: string; credits: number; input: Record<string, unknown> };
  };
  const finished = (id: string) =>
    waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${id}`, { key: KEY });
      return got.body.data.status === 'executed' || got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 30_000);

  it('renders a v5 batch of 2 at 16:9 as 1024x576 PNGs that scan', async () => {
    const created = await create({ workflow: 'generate_qr_art_v5', prompt: 'a neon city', qrContent: 'https://example.com/v5', batchSize: 2, aspectRatio: '16:9' });
    expect(created.input).toMatchObject({ aspectRatio: '16:9', resolution: 'SD', batchSize: 2 });

    const done = await finished(created.id);
    expect(done.status).toBe('executed');
    expect(done.isScanables).toEqual([true, true]);
    expect(done.output.images).toHaveLength(2);
    // Per image, the share of the capture family read: a true verdict needs nearly all of them.
    expect(done.output.scanRobustness).toHaveLength(2);
    for (const share of done.output.scanRobustness as number[]) expect(share).toBeGreaterThanOrEqual(11 / 12);
    expect(new Set(done.output.images).size).toBe(2);
    for (const url of done.output.images as string[]) {
      // Output URLs use PUBLIC_BASE_URL (http://localhost:PORT by default); fetch through the API's own address.
      const response = await fetch(`${stack.baseUrl}${new URL(url).pathname}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      const png = Buffer.from(await response.arrayBuffer());
      expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 1024, height: 576 });
      const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
      expect(await zbarDecode({ data, width: info.width, height: info.height, channels: info.channels as 1 })).toEqual(['https://example.com/v5']);
    }
  });

  it('outpainting, which needs the diffusion pipeline, fails with workflow_unavailable and a refund', async () => {
    const before = await balanceOf(stack.api.db, 'wes');
    const created = await create({ ...minimalBody('outpainting'), image: `${images.url}/code.png` });
    const done = await finished(created.id);
    expect(done).toMatchObject({ status: 'failed', refunded: true, output: '', error: { code: 'workflow_unavailable' } });
    expect(done.completedAt).not.toBeNull();
    // Charged at creation, refunded on failure (the worker may fail it before a balance read in between could see the charge).
    const cents = Math.round(created.credits * 100);
    const { rows } = await stack.api.db.query<{ reason: string; delta_cents: string }>('SELECT reason, delta_cents FROM credit_ledger WHERE prediction_id = $1 ORDER BY id', [created.id]);
    expect(rows.map((r) => [r.reason, Number(r.delta_cents)])).toEqual([['charge', -cents], ['refund', cents]]);
    expect(await balanceOf(stack.api.db, 'wes')).toBe(before);
  });
});

describe('QR Art v1-v3b: the client brings the code as an image URL', () => {
  let stack: TestStack;
  let images: FileServer;
  beforeAll(async () => {
    images = await serveImages();
    stack = await startTestStack({ worker: true, env: { API_KEYS: `wes:${KEY}:100`, IMAGE_FETCH_TIMEOUT_MS: '1500', WORKER_PIPELINE: 'control-image' } });
  });
  afterAll(async () => {
    await stack?.stop();
    await images?.close();
  });

  const run = async (qrImage: string) => {
    const before = await balanceOf(stack.api.db, 'wes');
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body: { workflow: 'generate_qr_art_v2', qrText: 'a garden', qrImage } });
    expect(created.status).toBe(200);
    const done = await waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${created.body.data.id}`, { key: KEY });
      return got.body.data.status === 'executed' || got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 30_000);
    return { done, refunded: (await balanceOf(stack.api.db, 'wes')) === before };
  };

  it('reads the code in qrImage and returns it normalized to the 768x768 canvas, scannable', async () => {
    const { done } = await run(`${images.url}/code.png`);
    expect(done).toMatchObject({ status: 'executed', isScanables: [true] });
    const response = await fetch(`${stack.baseUrl}${new URL(done.output.images[0]).pathname}`);
    const png = Buffer.from(await response.arrayBuffer());
    expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 768, height: 768 });
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(await zbarDecode({ data, width: info.width, height: info.height, channels: info.channels as 3 })).toEqual([CODE_TEXT]);
  });

  it('reads a light-on-dark code in qrImage and draws it dark on light, as the ControlNet expects', async () => {
    const { done } = await run(`${images.url}/inverted.png`);
    expect(done).toMatchObject({ status: 'executed', isScanables: [true] });
    const png = Buffer.from(await (await fetch(`${stack.baseUrl}${new URL(done.output.images[0]).pathname}`)).arrayBuffer());
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    // ZBar (which reads only dark-on-light here) reads the client's content.
    expect(await zbarDecode({ data, width: info.width, height: info.height, channels: info.channels as 3 })).toEqual([CODE_TEXT]);
  });

  it.each([
    ['an image with no QR code in it', '/noise.png', 'unreadable_qr_image', 'not a readable QR code'],
    ['a text file named .png', '/notes.png', 'invalid_qr_image', 'is not a PNG, JPEG, WebP or GIF image'],
    ['an image of two codes with different contents', '/two-codes.png', 'invalid_qr_image', 'holds 2 QR codes with different contents'],
    ['a large code with a small one of other content in a corner', '/code-and-small-code.png', 'invalid_qr_image', 'holds 2 QR codes with different contents'],
    ['a 50,000 x 50,000 PNG header', '/bomb.png', 'invalid_qr_image', '50000 x 50000 pixels'],
    ['a missing file', '/missing.png', 'invalid_qr_image', 'HTTP 404'],
    ['a server that never finishes the body', '/slow.png', 'invalid_qr_image', 'did not finish within'],
  ])('fails %s with a clear error and refunds it', async (_, path, code, text) => {
    const { done, refunded } = await run(`${images.url}${path}`);
    expect(done).toMatchObject({ status: 'failed', refunded: true, output: '', error: { code } });
    // Refused before the device started it: it never executed.
    expect(done.startedAt).toBeNull();
    expect(done.error.message).toMatch(/^qrImage /);
    expect(done.error.message).toContain(text);
    expect(refunded).toBe(true);
  });
});

const CODE_TEXT = 'https://example.com/brought-by-the-client';

/** A local image host: a real QR code, two codes in one image, noise, a text file, a pixel bomb, a 404 and a server that stalls. */
async function serveImages(): Promise<FileServer> {
  const code = await QRCode.toBuffer(CODE_TEXT, { errorCorrectionLevel: 'H', width: 300, margin: 2 });
  const noisePixels = Buffer.alloc(200 * 200 * 3);
  for (let i = 0; i < noisePixels.length; i++) noisePixels[i] = (i * 2654435761) >>> 24;
  const noise = await sharp(noisePixels, { raw: { width: 200, height: 200, channels: 3 } }).png().toBuffer();
  const other = await QRCode.toBuffer('https://example.com/another-code', { errorCorrectionLevel: 'H', width: 200, margin: 2 });
  const twoCodes = await sharp({ create: { width: 520, height: 300, channels: 3, background: '#ffffff' } })
    .composite([{ input: code, left: 0, top: 0 }, { input: other, left: 320, top: 50 }])
    .png()
    .toBuffer();
  // The small code vanishes where the scan ladder scales the large one to ~400 px.
  const large = await QRCode.toBuffer(CODE_TEXT, { errorCorrectionLevel: 'H', scale: 24, margin: 2 });
  const corner = await QRCode.toBuffer('https://example.com/small-print', { errorCorrectionLevel: 'L', scale: 3, margin: 2 });
  const cornerSide = (await sharp(corner).metadata()).width!;
  const codeAndSmallCode = await sharp({ create: { width: 1024, height: 1024, channels: 3, background: '#ffffff' } })
    .composite([{ input: large, left: 0, top: 0 }, { input: corner, left: 1024 - cornerSide, top: 1024 - cornerSide }])
    .png()
    .toBuffer();
  const inverted = await sharp(code).negate({ alpha: false }).png().toBuffer();
  const files = { '/code.png': code, '/inverted.png': inverted, '/two-codes.png': twoCodes, '/code-and-small-code.png': codeAndSmallCode, '/noise.png': noise, '/notes.png': Buffer.from('just some text, not an image\n'), '/bomb.png': pngHeaderOnly(50_000, 50_000) };
  return serveFiles(files, (req, res) => {
    if (req.url !== '/slow.png') return false;
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write(code.subarray(0, 64)); // then nothing: the fetch's total timeout must end it
    return true;
  });
}

describe('with the diffusion pipeline on the demo models', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: true, env: { API_KEYS: `wes:${KEY}:100` } });
  });
  afterAll(async () => stack?.stop());

  const run = async (body: Record<string, unknown>) => {
    const before = await balanceOf(stack.api.db, 'wes');
    const created = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body });
    expect(created.status).toBe(200);
    const done = await waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${created.body.data.id}`, { key: KEY });
      return got.body.data.status === 'executed' || got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 60_000);
    return { done, balanceChange: (await balanceOf(stack.api.db, 'wes')) - before };
  };

  it('generates a v5 batch of 2 at exactly 1024x576, with one scan verdict per image', async () => {
    const { done } = await run({ workflow: 'generate_qr_art_v5s', prompt: 'a blue and orange harbour', qrContent: 'https://example.com/art', batchSize: 2, aspectRatio: '16:9', seed: 7 });
    expect(done.status).toBe('executed');
    expect(done.isScanables).toHaveLength(2);
    for (const verdict of done.isScanables) expect(typeof verdict).toBe('boolean');
    const pngs = await Promise.all(
      (done.output.images as string[]).map(async (url) => Buffer.from(await (await fetch(`${stack.baseUrl}${new URL(url).pathname}`)).arrayBuffer())),
    );
    for (const png of pngs) expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 1024, height: 576 });
    expect(pngs[0]!.equals(pngs[1]!)).toBe(false); // seed and seed+1
  });

  it('rejects an image the NSFW checker flags: failed, NSFW output, charge kept', async () => {
    const { done, balanceChange } = await run({ workflow: 'generate_qr_art_v5s', prompt: 'nsfwdemo', qrContent: 'https://example.com/nsfw' });
    expect(done).toMatchObject({ status: 'failed', refunded: false, output: 'NSFW contents detected!', error: { code: 'nsfw_content' } });
    expect(balanceChange).toBe(-Math.round(done.credits * 100));
  });
});

describe('a job that no worker finishes', () => {
  let stack: TestStack;
  let rogue: Queue;
  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `wes:${KEY}:100`, JOB_MAX_DELIVER: '2', JOB_ACK_WAIT_MS: '1000' } });
    rogue = await connectQueue(stack.nats.url, 'test');
  });
  afterAll(async () => {
    await rogue?.close();
    await stack?.stop();
  });
  /** The prediction once the MaxDeliver handler has failed it. */
  const failedRecord = (id: string) =>
    waitFor(async () => {
      const got = await stack.call('GET', `/v1/predictions/${id}`, { key: KEY });
      return got.body.data.status === 'failed' ? got.body.data : undefined;
    }, 20_000);

  it('fails with worker_gave_up and a refund after MaxDeliver deliveries, and leaves the job stream', async () => {
    const before = await balanceOf(stack.api.db, 'wes');
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v4', qrText: 'a desert', qrContent: 'https://example.com/gave-up' },
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;

    // Play a worker that takes the job and dies: pull it, never ack; AckWait (1 s) hands it back.
    const consumer = await rogue.js.consumers.get(STREAMS.jobs, CONSUMERS.workers);
    const deliveries: number[] = [];
    for (let pulls = 0; deliveries.length < 2 && pulls < 10; pulls++) {
      const msg = await consumer.next({ expires: 3000 });
      if (!msg) continue;
      expect(JSON.parse(msg.string()).id).toBe(id);
      deliveries.push(msg.info.deliveryCount);
    }
    expect(deliveries).toEqual([1, 2]);
    // A worker keeps pulling; the server does not hand the job out a third time.
    expect(await consumer.next({ expires: 2500 })).toBeNull();

    const failed = await failedRecord(id);
    expect(failed).toMatchObject({ refunded: true, error: { code: 'worker_gave_up' } });
    expect(typeof failed.error.message).toBe('string');
    expect(await balanceOf(stack.api.db, 'wes')).toBe(before);

    await waitFor(async () => ((await rogue.jsm.streams.info(STREAMS.jobs)).state.messages === 0 ? true : undefined), 10_000);
    expect(await consumer.next({ expires: 1500 })).toBeNull();
  });

  it('still fails and refunds it when reading the job back fails once (a JetStream API timeout): the advisory is retried', async () => {
    const before = await balanceOf(stack.api.db, 'wes');
    // Fault injection: the API's first read of a job from the stream times out.
    const streams = stack.api.queue.jsm.streams;
    const getMessage = streams.getMessage.bind(streams);
    let failures = 0;
    streams.getMessage = async (...args: Parameters<typeof getMessage>) => {
      if (failures++ === 0) throw new Error('TIMEOUT (injected)');
      return getMessage(...args);
    };
    try {
      const created = await stack.call('POST', '/v1/predictions/queue', {
        key: KEY,
        body: { workflow: 'generate_qr_art_v4', qrText: 'a desert', qrContent: 'https://example.com/gave-up-2' },
      });
      const id = created.body.data.id as string;
      const consumer = await rogue.js.consumers.get(STREAMS.jobs, CONSUMERS.workers);
      for (let deliveries = 0, pulls = 0; deliveries < 2 && pulls < 10; pulls++) if (await consumer.next({ expires: 3000 })) deliveries++;
      // The server announces MaxDeliver when a pull asks for the job a third time.
      expect(await consumer.next({ expires: 2500 })).toBeNull();

      const failed = await failedRecord(id);
      expect(failed).toMatchObject({ refunded: true, error: { code: 'worker_gave_up' } });
      expect(failures).toBeGreaterThanOrEqual(2);
      expect(await balanceOf(stack.api.db, 'wes')).toBe(before);
    } finally {
      streams.getMessage = getMessage;
    }
  });
});
