import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, noBrowserReason, openPlayground } from '../helpers/browser.ts';
import { serveFiles, type FileServer } from '../helpers/file-server.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

/**
 * The playground at / (issue 15) in Debian's chromium against the real stack: the API, NATS,
 * the database and a worker on the demo models (CPU). One v5 generation at the smallest size
 * (30 steps, so that the bar has steps to show); the other predictions are outpaintings of an address that
 * refuses connections, which fail at once (and are refunded).
 *
 * The tests share the stack and run in order: (b) expects no prediction yet, the history test
 * pages through what (a) and the outpainting test made.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/playground-*.png (palette PNGs).
 */

// The callbacks given to page.evaluate run in the page; the project compiles without the DOM types.
declare const document: any;
declare const window: any;
declare const localStorage: any;
declare const MutationObserver: any;
type Element = any;

const KEY = 'key-playground-0123456789abcdef0123456789';
const USER = 'pia';
const WRONG_KEY = 'key-nobody-has-this-0123456789abcdef012345';
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : undefined;
const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 900 };

async function shoot(page: Page, name: string, options: { selector?: string; fullPage?: boolean } = {}) {
  if (!SCREENSHOTS) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  const raw = options.selector ? await page.locator(options.selector).screenshot() : await page.screenshot({ fullPage: options.fullPage ?? false });
  // A 256-colour palette keeps each file small; the UI has few colours.
  await sharp(raw).png({ palette: true, colours: 128, compressionLevel: 9, effort: 10 }).toFile(path.join(SCREENSHOTS, `playground-${name}.png`));
}

describe.skipIf(!!noBrowserReason)('playground in a browser', () => {
  let stack: TestStack;
  let browser: Browser;
  let files: FileServer;

  beforeAll(async () => {
    files = await serveFiles({ '/photo.png': await sharp({ create: { width: 128, height: 96, channels: 3, background: { r: 200, g: 120, b: 40 } } }).png().toBuffer() });
    stack = await startTestStack({
      worker: true,
      env: { API_KEYS: `${USER}:${KEY}:100`, WARMUP_SIZES: 'off', FINISH_THREADS: '1', WORKER_PREFETCH: '0' },
    });
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    // A browser that does not close within 10 s must not keep the stack from stopping.
    await Promise.race([browser?.close(), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    await stack?.stop();
    await files?.close();
  }, 120_000);

  /** A fresh browser profile on the page, the key typed in when given. */
  const open = (viewport = DESKTOP, key?: string, beforeLoad?: (page: Page) => Promise<void>): Promise<Page> =>
    openPlayground(browser, stack.baseUrl, { viewport, ...(key !== undefined ? { key } : {}), ...(beforeLoad ? { beforeLoad } : {}) });

  const close = (page: Page) => page.context().close();

  async function noHorizontalScroll(page: Page) {
    const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
  }

  it('is one page from this server: no other origin, a self-only Content-Security-Policy', async () => {
    const page = await fetch(`${stack.baseUrl}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    const html = await page.text();
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const parser = await fetch(`${stack.baseUrl}/playground/vendor/eventsource-parser.js`);
    expect(parser.status).toBe(200);
    expect(parser.headers.get('content-type')).toMatch(/javascript/);
    expect(await parser.text()).toContain('createParser');
    expect((await fetch(`${stack.baseUrl}/playground/%2e%2e/routes/playground.ts`)).status).toBe(404);
  });

  it('(d) shows the layout preview and redraws it when the pattern changes; the price before creating', async () => {
    const page = await open(DESKTOP);
    expect(await page.inputValue('#workflow')).toBe('generate_qr_art_v5');
    // Every workflow of the catalogue is offered.
    const offered = await page.$$eval('#workflow option', (options) => options.map((o) => (o as Element).value));
    expect(offered).toHaveLength(13);
    expect(offered).toContain('outpainting');
    // The previews the page receives, with the pattern each was asked for.
    const previews: { pattern: string; png: Buffer }[] = [];
    await page.route('**/v1/qr/preview', async (route) => {
      const response = await route.fetch();
      const png = await response.body();
      if (response.status() === 200) {
        const sent = JSON.parse(route.request().postData() ?? '{}') as { qrCodePartern?: string };
        previews.push({ pattern: sent.qrCodePartern ?? 'none', png });
      }
      await route.fulfill({ response, body: png });
    });
    const shownSrc = (previous?: string) =>
      waitFor(async () => {
        const now = await page.getAttribute('#preview-image', 'src');
        return now?.startsWith('blob:') && now !== previous ? now : undefined;
      });
    await page.fill('[name=prompt]', 'a lighthouse on a cliff, watercolor');
    await page.fill('[name=qrContent]', 'https://example.com/menu');
    const firstSrc = await shownSrc();
    const image = await page.$eval('#preview-image', (img) => ({ w: (img as Element).naturalWidth, h: (img as Element).naturalHeight }));
    expect(image).toEqual({ w: 512, h: 512 });
    expect(await page.textContent('#preview-note')).toContain('768 × 768');
    expect(await page.textContent('#cost-value')).toBe('2.99 credits');
    // qrX / qrY learn their range for this size: (768 - round(0.6 x 768)) = 307.
    expect(await page.getAttribute('[name=qrX]', 'max')).toBe('307');
    await shoot(page, 'form-desktop');

    await page.selectOption('[name=qrCodePartern]', 'c2');
    await shownSrc(firstSrc);
    const before = previews.find((p) => p.pattern === 's1');
    const after = await waitFor(async () => previews.find((p) => p.pattern === 'c2'));
    expect(before).toBeDefined();
    expect(after.png.equals(before!.png)).toBe(false);

    // The shape changes the picture's size, and the price follows the resolution.
    await page.selectOption('[name=aspectRatio]', '16:9');
    await page.selectOption('[name=resolution]', 'HD');
    await waitFor(async () => ((await page.textContent('#preview-note'))?.includes('1280 × 720') ? true : undefined));
    await waitFor(async () => ((await page.textContent('#cost-value')) === '4.49 credits' ? true : undefined));
    await close(page);
  });

  it('(c) a wrong key shows the 401 message beside the key field', async () => {
    const expected = await stack.call('GET', '/v1/predictions', { key: WRONG_KEY });
    expect(expected.status).toBe(401);
    const page = await open(PHONE, WRONG_KEY);
    await page.waitForSelector('#error-x-api-key:not([hidden])');
    expect(await page.textContent('#error-x-api-key')).toBe(expected.body.error.message);
    await shoot(page, 'key-error-phone', { selector: '#key-card' });
    // Creating with it says the same, at the same place, and the key is kept in the browser.
    await page.evaluate(() => {
      const slot = document.getElementById('error-x-api-key')!;
      slot.textContent = '';
      slot.hidden = true;
    });
    await page.fill('[name=prompt]', 'a bakery menu');
    await page.fill('[name=qrContent]', 'https://example.com/bakery');
    await page.click('#create-button');
    await page.waitForSelector('#error-x-api-key:not([hidden])');
    expect(await page.textContent('#error-x-api-key')).toBe(expected.body.error.message);
    expect(await page.getAttribute('#api-key', 'aria-invalid')).toBe('true');
    expect(await page.evaluate(() => localStorage.getItem('qr-art.apiKey'))).toBe(WRONG_KEY);
    await close(page);
  });

  it('(b) a field the API refuses shows its message beside that field', async () => {
    const page = await open(DESKTOP, KEY);
    await page.fill('[name=prompt]', 'a poster for a jazz night');
    await page.fill('[name=qrContent]', 'https://example.com/jazz');
    await page.waitForSelector('#preview-image[src^="blob:"]');
    await page.fill('[name=qrRatio]', '1.5');
    const body = { workflow: 'generate_qr_art_v5', prompt: 'a poster for a jazz night', qrContent: 'https://example.com/jazz', qrRatio: 1.5 };
    const refused = await stack.call('POST', '/v1/predictions/queue', { key: KEY, body });
    expect(refused.status).toBe(400);
    const message = refused.body.error.details.find((d: { field: string }) => d.field === 'qrRatio').message as string;
    await page.click('#create-button');
    await page.waitForSelector('#error-qrRatio:not([hidden])');
    expect(await page.textContent('#error-qrRatio')).toBe(message);
    expect(await page.getAttribute('[name=qrRatio]', 'aria-invalid')).toBe('true');
    expect(await page.isHidden('#result-card')).toBe(true);
    // The live check agrees a moment later: no price for a body the API refuses.
    await waitFor(async () => ((await page.textContent('#cost-value')) === '–' ? true : undefined));
    await shoot(page, 'field-error');

    // Outpainting with a URL that is not one, and a field inside "More options" (webhook).
    await page.selectOption('#workflow', 'outpainting');
    for (const [name, value] of Object.entries({ image: 'not a url', image_width: '512', image_height: '512', padding_left: '64', padding_right: '64', padding_top: '0', padding_bottom: '0', webhook: 'ftp://example.com/hook' })) {
      if (name === 'webhook') await page.click('details.more summary');
      await page.fill(`[name=${name}]`, value);
    }
    await page.selectOption('[name=type]', 'one_shot');
    await page.click('#create-button');
    await page.waitForSelector('#error-image:not([hidden])');
    const outpaint = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'outpainting', image: 'not a url', image_width: 512, image_height: 512, padding_left: 64, padding_right: 64, padding_top: 0, padding_bottom: 0, type: 'one_shot', webhook: 'ftp://example.com/hook' },
    });
    const messageOf = (field: string) => outpaint.body.error.details.find((d: { field: string }) => d.field === field).message as string;
    expect(await page.textContent('#error-image')).toBe(messageOf('image'));
    expect(await page.textContent('#error-webhook')).toBe(messageOf('webhook'));
    // Nothing was created or charged.
    const list = await stack.call('GET', '/v1/predictions', { key: KEY });
    expect(list.body.data.totalDocs).toBe(0);
    await close(page);
  });

  it('(a) creates a v5 prediction: the progress bar moves, the image comes with its scan badge and robustness', async () => {
    const page = await open(DESKTOP, KEY);
    // Everything the bar and the status show, recorded in the page as it changes.
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as { seen: string[] }).seen = seen;
      const bar = document.getElementById('progress-bar') as Element;
      const card = document.getElementById('result-card')!;
      const note = () => {
        const entry = `${card.dataset.status ?? '-'} ${bar.hasAttribute('value') ? `${bar.value}/${bar.max}` : 'indeterminate'}`;
        if (seen.at(-1) !== entry) seen.push(entry);
      };
      new MutationObserver(note).observe(bar, { attributes: true });
      new MutationObserver(note).observe(card, { attributes: true, attributeFilter: ['data-status'] });
    });
    await page.fill('[name=prompt]', 'a koi pond in autumn');
    await page.fill('[name=qrContent]', 'https://example.com/koi');
    await page.click('details.more summary');
    // 30 steps, not the fewest: progress goes out at most every 250 ms and the stream opens after
    // the create returns, so 10 quick demo steps could show the bar only full.
    await page.fill('[name=steps]', '30');
    await page.fill('[name=seed]', '1234');
    await waitFor(async () => ((await page.textContent('#cost-value')) === '2.99 credits' ? true : undefined));
    await page.click('#create-button');
    await page.waitForSelector('#result-card:not([hidden])');
    // A moment into the run, for the screenshot of the progress.
    if (SCREENSHOTS) {
      await page.waitForFunction(() => (document.getElementById('progress-bar') as Element).hasAttribute('value') || document.getElementById('result-card')!.dataset.status === 'executed', undefined, { timeout: 120_000, polling: 20 });
      await shoot(page, 'progress', { selector: '#result-card' });
    }
    await page.waitForSelector('#result-card[data-status="executed"]', { timeout: 150_000 });
    const seen = await page.evaluate(() => (window as { seen: string[] }).seen);
    console.log('progress bar values shown:', seen.join(' → '));
    const steps = seen.map((entry) => /(\d+)\/(\d+)$/.exec(entry)).filter((m): m is RegExpExecArray => !!m);
    // The bar moved through denoising steps before the end, never backwards, and ends full.
    const during = steps.filter((m) => !m.input.startsWith('executed'));
    expect(during.length).toBeGreaterThanOrEqual(2);
    const values = during.map((m) => Number(m[1]) / Number(m[2]));
    expect(values.some((v) => v > 0 && v < 1)).toBe(true);
    for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThanOrEqual(values[i - 1]!);
    expect(seen.at(-1)).toMatch(/^executed (\d+)\/\1$/);
    expect(await page.getAttribute('#result-card', 'data-updates')).toBe('stream');

    const record = (await stack.call('GET', '/v1/predictions?limit=1', { key: KEY })).body.data.docs[0];
    const full = (await stack.call('GET', `/v1/predictions/${record.id}`, { key: KEY })).body.data;
    expect(full.status).toBe('executed');
    expect(full.input).toMatchObject({ workflow: 'generate_qr_art_v5', steps: 30, seed: 1234, resolution: 'SD' });
    await page.waitForFunction(() => {
      const img = document.querySelector('#result-images img') as Element;
      return !!img && img.complete && img.naturalWidth > 0;
    });
    const shown = await page.$$eval('#result-images figure', (figures) =>
      figures.map((f) => ({
        width: (f.querySelector('img') as Element).naturalWidth,
        badge: f.querySelector('.badge')?.textContent,
        robustness: f.querySelector('.robustness')?.textContent,
        download: (f.querySelector('a.download') as Element).href,
      })),
    );
    expect(shown).toHaveLength(1);
    expect(shown[0]!.width).toBe(768);
    expect(shown[0]!.badge).toBe(full.isScanables[0] ? 'scans' : 'may not scan');
    expect(full.output.scanRobustness).toHaveLength(1);
    expect(shown[0]!.robustness).toBe(`${Math.round(full.output.scanRobustness[0] * 100)}% of test photos`);
    expect(new URL(shown[0]!.download).origin).toBe(new URL(stack.baseUrl).origin);
    expect((await fetch(shown[0]!.download)).headers.get('content-type')).toBe('image/png');
    await shoot(page, 'result', { selector: '#result-card' });
    await close(page);
  }, 180_000);

  it('outpaints an image given by URL; the caption used as the prompt is shown', async () => {
    const page = await open(PHONE, KEY);
    await page.selectOption('#workflow', 'outpainting');
    const fields = { image: `${files.url}/photo.png`, image_width: '128', image_height: '96', padding_left: '64', padding_right: '0', padding_top: '0', padding_bottom: '0' };
    for (const [name, value] of Object.entries(fields)) await page.fill(`[name=${name}]`, value);
    await page.selectOption('[name=type]', 'one_shot');
    // The canvas drawn from the sizes, and the price of the type.
    await waitFor(async () => ((await page.textContent('#preview-note'))?.includes('192 × 96') ? true : undefined));
    await waitFor(async () => ((await page.textContent('#cost-value')) === '2.00 credits' ? true : undefined));
    await noHorizontalScroll(page);
    await page.click('#create-button');
    await page.waitForSelector('#result-card[data-status="executed"]', { timeout: 120_000 });
    await page.waitForSelector('#result-caption:not([hidden])');
    const full = (await stack.call('GET', '/v1/predictions?limit=1', { key: KEY })).body.data.docs[0];
    expect(await page.textContent('#result-caption')).toContain(full.output.caption);
    const shown = await page.$$eval('#result-images figure', (figures) => figures.map((f) => ({ badge: f.querySelector('.badge'), link: !!f.querySelector('a.download') })));
    // No code in an outpainting: no scan badge.
    expect(shown).toEqual([{ badge: null, link: true }]);
    await close(page);
  }, 150_000);

  it('lists past predictions a page at a time; opening one shows it', async () => {
    // Four outpaintings of an address that refuses connections: they fail at once, refunded.
    for (let i = 0; i < 4; i++) {
      const created = await stack.call('POST', '/v1/predictions/queue', {
        key: KEY,
        body: { workflow: 'outpainting', image: `http://127.0.0.1:9/picture-${i}.png`, image_width: 64, image_height: 64, padding_left: 64, padding_right: 0, padding_top: 0, padding_bottom: 0, type: 'one_shot' },
      });
      expect(created.status).toBe(200);
    }
    await waitFor(async () => {
      const list = await stack.call('GET', '/v1/predictions?limit=10', { key: KEY });
      return list.body.data.docs.every((d: { status: string }) => d.status === 'executed' || d.status === 'failed') ? true : undefined;
    }, 60_000);
    const page = await open(PHONE, KEY);
    await page.waitForSelector('#history-list li');
    expect(await page.$$eval('#history-list li', (items) => items.length)).toBe(5);
    expect(await page.textContent('#history-page')).toBe('page 1 of 2');
    await noHorizontalScroll(page);
    await page.click('#history-next');
    await waitFor(async () => ((await page.textContent('#history-page')) === 'page 2 of 2' ? true : undefined));
    expect(await page.$$eval('#history-list li', (items) => items.length)).toBe(1);
    // Six in all: the oldest, alone on page 2, is the v5 generation. Open it.
    await page.click('#history-list li button');
    await page.waitForSelector('#result-card[data-status="executed"]');
    await page.waitForSelector('#result-images .badge');
    await noHorizontalScroll(page);
    await shoot(page, 'result-phone', { selector: '#result-card' });
    // The status line is a live region, and says what a finished prediction gave.
    expect(await page.getAttribute('#result-card .status', 'role')).toBe('status');
    expect((await page.textContent('#result-message'))?.trim()).toBe('Done. 1 image, it scans.');
    await page.click('#history-prev');
    await waitFor(async () => ((await page.textContent('#history-page')) === 'page 1 of 2' ? true : undefined));
    // A refunded prediction is listed as refunded, not at its full price.
    expect(await page.textContent('#history-list li:first-child small')).toContain('credits (refunded)');
    // Opened from the keyboard: the list redraws (its status is final) and the focus stays on the item.
    const first = await page.$('#history-list li button');
    const id = await first!.getAttribute('data-id');
    await first!.focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('#result-card[data-status="failed"]');
    await page.waitForFunction((el: Element) => !el.isConnected, first, { timeout: 10_000 });
    expect(await page.evaluate(() => document.activeElement?.dataset?.id)).toBe(id);
    expect(await page.textContent('#result-error')).toMatch(/image/i);
    expect(await page.textContent('#result-id')).toContain('(refunded)');
    // A finished one opened after a failed one: its bar says finished, not "stopped".
    await page.click('#history-next');
    await waitFor(async () => ((await page.textContent('#history-page')) === 'page 2 of 2' ? true : undefined));
    await page.click('#history-list li button');
    await page.waitForSelector('#result-card[data-status="executed"]');
    expect(await page.getAttribute('#progress-bar', 'aria-valuetext')).toBe('finished');
    await close(page);
  });

  it('(e) fits a 375 x 812 phone screen: no horizontal scroll in any state', async () => {
    const page = await open(PHONE, KEY);
    await noHorizontalScroll(page);
    await page.fill('[name=prompt]', 'a menu for a tiny ramen bar, ink drawing');
    await page.fill('[name=qrContent]', 'https://example.com/a/rather/long/address/for/the/menu?table=12&lang=en');
    await page.waitForSelector('#preview-image[src^="blob:"]');
    await page.click('details.more summary');
    await page.click('#key-card details summary');
    await noHorizontalScroll(page);
    await shoot(page, 'form-phone');
    for (const workflow of ['generate_qr_art', 'generate_qr_art_v4s', 'generate_qr_art_v5s', 'outpainting']) {
      await page.selectOption('#workflow', workflow);
      await noHorizontalScroll(page);
    }
    await page.selectOption('#workflow', 'generate_qr_art_v5');
    await page.fill('[name=qrRatio]', '0.1');
    await page.click('#create-button');
    await page.waitForSelector('#error-qrRatio:not([hidden])');
    await noHorizontalScroll(page);
    await close(page);
  });
  it('a create whose answer was lost is tried again with the same Idempotency-Key: one prediction, one charge', async () => {
    const page = await open(DESKTOP, KEY);
    const count = async () => ((await stack.call('GET', '/v1/predictions?limit=1', { key: KEY })).body as { data: { totalDocs: number } }).data.totalDocs;
    const before = await count();
    const keys: string[] = [];
    const replayed: (string | null)[] = [];
    let lost = false;
    let answered = 0;
    await page.route('**/v1/predictions/queue', async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      const response = await route.fetch(); // the service makes (and charges) the prediction
      replayed.push(response.headers()['idempotent-replayed'] ?? null);
      if (lost) await route.fulfill({ response });
      else await route.abort('connectionreset'); // and the answer never reaches the page
      lost = true;
      answered++;
    });
    await page.fill('[name=prompt]', 'a paper boat');
    await page.fill('[name=qrContent]', 'https://example.com/boat');
    await page.click('details.more summary');
    await page.fill('[name=steps]', '10');
    await page.click('#create-button');
    await waitFor(async () => ((await page.textContent('#form-error'))?.startsWith('Could not reach the service') ? true : undefined));
    await page.click('#create-button');
    await page.waitForSelector('#result-card:not([hidden])');
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(replayed).toEqual([null, 'true']);
    expect(await count()).toBe(before + 1);
    // Another body is another prediction: a new key.
    await page.fill('[name=prompt]', 'a paper plane');
    await page.click('#create-button');
    await waitFor(async () => (answered === 3 ? true : undefined));
    expect(keys[2]).not.toBe(keys[0]);
    expect(replayed[2]).toBeNull();
    expect(await count()).toBe(before + 2);
    await close(page);
  }, 60_000);

  it('follows by polling every 2 s when the event stream cannot be had', async () => {
    const page = await open(PHONE, KEY);
    const polls: number[] = [];
    await page.route('**/v1/predictions/*/events', (route) => route.abort('connectionreset'));
    page.on('request', (request) => {
      if (/\/v1\/predictions\/[0-9a-f-]{36}$/.test(new URL(request.url()).pathname)) polls.push(Date.now());
    });
    await page.fill('[name=prompt]', 'a tea house sign');
    await page.fill('[name=qrContent]', 'https://example.com/tea');
    await page.click('details.more summary');
    await page.fill('[name=steps]', '10');
    await page.click('#create-button');
    await page.waitForSelector('#result-card[data-updates="polling"]');
    expect(await page.textContent('#progress-text')).toContain('every 2 seconds');
    await page.waitForSelector('#result-card[data-status="executed"]', { timeout: 120_000 });
    await page.waitForSelector('#result-images .badge');
    expect(polls.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < polls.length; i++) expect(polls[i]! - polls[i - 1]!).toBeGreaterThanOrEqual(1500);
    await close(page);
  }, 150_000);

  describe('says what it cannot do (the service answers are injected with page.route)', () => {
    const FAKE_ID = '00000000-0000-4000-8000-00000000f00d';
    const record = (status: string, more: Record<string, unknown> = {}) => ({
      id: FAKE_ID,
      userId: USER,
      status,
      input: { workflow: 'generate_qr_art_v5', prompt: 'a lighthouse', qrContent: 'https://example.com/l' },
      output: '',
      error: null,
      isScanables: null,
      credits: 2.99,
      refunded: false,
      createdAt: new Date().toISOString(),
      startedAt: status === 'queued' ? null : new Date().toISOString(),
      completedAt: null,
      ...more,
    });
    const unavailable = { success: false, error: { code: 'service_unavailable', message: 'the database is temporarily unavailable; retry after 1 s', details: [] } };

    it('a stream that breaks mid-run says so beside the last step; a failed prediction stops the bar and the note', async () => {
      const page = await open(DESKTOP, KEY);
      let ended = false;
      await page.route('**/v1/predictions/queue', (route) => route.fulfill({ json: { success: true, data: record('queued') } }));
      await page.route(`**/v1/predictions/${FAKE_ID}/events`, (route) =>
        route.fulfill({
          headers: { 'content-type': 'text/event-stream' },
          body: `event: prediction\ndata: ${JSON.stringify(record('executing'))}\n\nevent: progress\ndata: {"step":3,"total":10}\n\n`,
        }),
      );
      await page.route(`**/v1/predictions/${FAKE_ID}`, (route) =>
        route.fulfill({
          json: { success: true, data: ended ? record('failed', { error: { code: 'invalid_image', message: 'the image could not be fetched' }, refunded: true }) : record('executing') },
        }),
      );
      await page.fill('[name=prompt]', 'a lighthouse');
      await page.fill('[name=qrContent]', 'https://example.com/l');
      await page.click('#create-button');
      await page.waitForSelector('#result-card[data-updates="polling"]');
      await waitFor(async () => ((await page.textContent('#progress-text'))?.includes('Step 3 of 10 · Live updates unavailable') ? true : undefined));
      expect(await page.getAttribute('#progress-bar', 'value')).toBe('3');
      // Each poll answers the same record: the status line (a live region) is not written again, or it would be announced every 2 s.
      await page.evaluate(() => {
        window.statusWrites = 0;
        new MutationObserver((records: unknown[]) => (window.statusWrites += records.length)).observe(document.querySelector('#result-card .status'), { childList: true, characterData: true, subtree: true });
      });
      await new Promise((resolve) => setTimeout(resolve, 4500));
      expect(await page.evaluate(() => window.statusWrites)).toBe(0);
      ended = true;
      await page.waitForSelector('#result-card[data-status="failed"]');
      expect(await page.textContent('#result-error')).toBe('the image could not be fetched');
      expect(await page.textContent('#progress-text')).toBe('');
      // Determinate: an indeterminate bar would still look at work.
      expect(await page.getAttribute('#progress-bar', 'value')).toBe('0');
      await close(page);
    });

    it('a service that comes back clears "could not reach" and is followed live again', async () => {
      const page = await open(DESKTOP, KEY);
      let streams = 0;
      let down = true;
      await page.route('**/v1/predictions/queue', (route) => route.fulfill({ json: { success: true, data: record('queued') } }));
      const stream = (step: number) => ({
        headers: { 'content-type': 'text/event-stream' },
        body: `event: prediction\ndata: ${JSON.stringify(record('executing'))}\n\nevent: progress\ndata: {"step":${step},"total":10}\n\n`,
      });
      // The first stream tells step 3 and ends; then the service is away; the stream opened once it is back tells step 5.
      await page.route(`**/v1/predictions/${FAKE_ID}/events`, (route) => {
        streams++;
        if (streams === 1) return route.fulfill(stream(3));
        return down ? route.abort('connectionrefused') : route.fulfill(stream(5));
      });
      await page.route(`**/v1/predictions/${FAKE_ID}`, (route) =>
        down ? route.abort('connectionrefused') : route.fulfill({ json: { success: true, data: record('executing') } }),
      );
      await page.fill('[name=prompt]', 'a lighthouse');
      await page.fill('[name=qrContent]', 'https://example.com/l');
      await page.click('#create-button');
      // Said in the status line, a live region: a screen reader hears it as well.
      await waitFor(async () => ((await page.textContent('#result-card [role=status]'))?.includes('Could not reach the service') ? true : undefined));
      down = false;
      await waitFor(async () => ((await page.textContent('#progress-text'))?.startsWith('Step 5 of 10') ? true : undefined));
      expect(await page.textContent('#result-card [role=status]')).not.toContain('Could not reach');
      expect(await page.textContent('#result-message')).toBe('Painting…');
      expect(streams).toBeGreaterThanOrEqual(2);
      await close(page);
    });

    it('a prediction handed back to the queue (its worker stopped) starts its bar over with its next run', async () => {
      const page = await open(DESKTOP, KEY);
      await page.route('**/v1/predictions/queue', (route) => route.fulfill({ json: { success: true, data: record('queued') } }));
      // The service sends no event for a hand-back: the next run's steps are what tell it.
      await page.route(`**/v1/predictions/${FAKE_ID}/events`, (route) =>
        route.fulfill({
          headers: { 'content-type': 'text/event-stream' },
          body: [
            `event: prediction\ndata: ${JSON.stringify(record('executing'))}\n\n`,
            'event: progress\ndata: {"step":7,"total":10}\n\n',
            'event: progress\ndata: {"step":2,"total":10}\n\n',
          ].join(''),
        }),
      );
      await page.route(`**/v1/predictions/${FAKE_ID}`, (route) => route.fulfill({ json: { success: true, data: record('executing') } }));
      await page.fill('[name=prompt]', 'a lighthouse');
      await page.fill('[name=qrContent]', 'https://example.com/l');
      await page.click('#create-button');
      await page.waitForSelector('#result-card[data-updates="polling"]');
      expect(await page.textContent('#progress-text')).toBe('Step 2 of 10 · Live updates unavailable; checking every 2 seconds.');
      expect(await page.getAttribute('#progress-bar', 'value')).toBe('2');
      await close(page);
    });

    it('an event stream that says nothing (a lost connection, a proxy holding it back) is given up after 45 s for polling', async () => {
      // The page's clock is Playwright's, so 45 s pass in a moment; the stream's request is never answered.
      const page = await open(DESKTOP, KEY, (p) => p.clock.install());
      let streams = 0;
      await page.route('**/v1/predictions/queue', (route) => route.fulfill({ json: { success: true, data: record('queued') } }));
      await page.route(`**/v1/predictions/${FAKE_ID}/events`, () => void streams++);
      await page.route(`**/v1/predictions/${FAKE_ID}`, (route) =>
        route.fulfill({ json: { success: true, data: record('executed', { output: { images: [] }, isScanables: [], completedAt: new Date().toISOString() }) } }),
      );
      await page.fill('[name=prompt]', 'a lighthouse');
      await page.fill('[name=qrContent]', 'https://example.com/l');
      await page.click('#create-button');
      await waitFor(async () => (streams === 1 ? true : undefined));
      await page.clock.fastForward(30_000);
      expect(await page.getAttribute('#result-card', 'data-updates')).toBe('stream');
      await page.clock.fastForward(16_000);
      await page.waitForSelector('#result-card[data-updates="polling"]');
      await page.waitForSelector('#result-card[data-status="executed"]');
      await close(page);
    });

    it('a history item that cannot be opened, and a list that cannot be loaded, say why (and the list tries again)', async () => {
      // Something to list, whatever ran before: an outpainting of an address that refuses connections.
      const made = await stack.call('POST', '/v1/predictions/queue', {
        key: KEY,
        body: { workflow: 'outpainting', image: 'http://127.0.0.1:9/history.png', image_width: 64, image_height: 64, padding_left: 64, padding_right: 0, padding_top: 0, padding_bottom: 0, type: 'one_shot' },
      });
      expect(made.status).toBe(200);
      const page = await open(DESKTOP);
      let listRefusals = 1;
      await page.route('**/v1/predictions?*', (route) =>
        listRefusals-- > 0 ? route.fulfill({ status: 503, headers: { 'retry-after': '1' }, json: unavailable }) : route.continue(),
      );
      // Typed and left, as a person would: the one change event (a synthetic one here would be
      // followed by the browser's own on the next click, reloading the list over the notice).
      await page.fill('#api-key', KEY);
      await page.locator('#api-key').blur();
      await waitFor(async () => ((await page.textContent('#history-note'))?.includes('Could not load your predictions: the database is temporarily unavailable') ? true : undefined));
      expect(await page.textContent('#history-note')).toContain('Trying again in 1 s.');
      await page.waitForSelector('#history-list li');
      await page.route(/\/v1\/predictions\/[0-9a-f-]{36}$/, (route) => route.fulfill({ status: 503, headers: { 'retry-after': '1' }, json: unavailable }));
      await page.click('#history-list li button');
      await waitFor(async () => ((await page.textContent('#history-note'))?.startsWith('Could not open') ? true : undefined));
      expect(await page.textContent('#history-note')).toBe('Could not open that prediction: the database is temporarily unavailable; retry after 1 s');
      await close(page);
    });

    it('a paused price check clears the price instead of showing one for other fields', async () => {
      const page = await open(DESKTOP, KEY);
      await page.fill('[name=prompt]', 'a bakery sign');
      await page.fill('[name=qrContent]', 'https://example.com/bread');
      await waitFor(async () => ((await page.textContent('#cost-value')) === '2.99 credits' ? true : undefined));
      const limited = { success: false, error: { code: 'rate_limited', message: 'too many previews', details: [] } };
      await page.route('**/v1/qr/preview', (route) => route.fulfill({ status: 429, headers: { 'retry-after': '30' }, json: limited }));
      await page.route('**/v1/predictions/quote', (route) => route.fulfill({ status: 429, headers: { 'retry-after': '30' }, json: limited }));
      await page.selectOption('[name=resolution]', 'UltraHD');
      await waitFor(async () => ((await page.textContent('#cost-value')) === '– (price check paused for 30 s)' ? true : undefined));
      await close(page);
    });

    it('live checks: an error is not announced again at each pause in typing, errors of emptied fields go, a canvas too large is said; a refused Create\'s banner goes with the next edit', async () => {
      const page = await open(DESKTOP, KEY);
      expect((await page.getAttribute('#api-key', 'aria-describedby'))?.split(' ')).toContain('error-x-api-key');
      await page.fill('[name=prompt]', 'a harbour at dawn');
      await page.fill('[name=qrContent]', 'https://example.com/harbour');
      await page.fill('[name=qrRatio]', '5');
      await page.waitForSelector('#error-qrRatio:not([hidden])');
      // Every rewrite of a role=alert slot is announced: count them while the prompt is typed, pausing past each check.
      await page.evaluate(() => {
        window.rewrites = 0;
        new MutationObserver((records: unknown[]) => (window.rewrites += records.length)).observe(document.getElementById('error-qrRatio'), { childList: true, characterData: true, subtree: true, attributes: true });
      });
      for (const letter of 'boats') {
        await page.locator('[name=prompt]').press('End');
        await page.keyboard.type(letter);
        await new Promise((resolve) => setTimeout(resolve, 600));
      }
      expect(await page.evaluate(() => window.rewrites)).toBe(0);
      expect(await page.isHidden('#error-qrRatio')).toBe(false);
      // qrRatio emptied while another number cannot be read: its old error goes, the unreadable one's stays.
      await page.fill('[name=qrRatio]', '');
      await page.locator('[name=qrX]').pressSequentially('1e');
      await waitFor(async () => ((await page.isHidden('#error-qrRatio')) ? true : undefined));

      // A refused Create's banner (no credits) goes once the form is edited.
      await page.fill('[name=qrX]', '');
      await page.route('**/v1/predictions/queue', (route) =>
        route.fulfill({ status: 402, json: { success: false, error: { code: 'insufficient_credits', message: 'this prediction costs 2.99 credits and the balance is 1', details: [] } } }),
      );
      await page.click('#create-button');
      await page.waitForSelector('#form-error:not([hidden])');
      await page.locator('[name=prompt]').press('End');
      await page.keyboard.type('!');
      expect(await page.isHidden('#form-error')).toBe(true);

      // An outpainted canvas over the size limit: no field to show it beside, so the note says it.
      await page.selectOption('#workflow', 'outpainting');
      for (const [name, value] of Object.entries({ image: 'https://example.com/a.png', image_width: '2048', image_height: '1024', padding_left: '1000', padding_right: '1000', padding_top: '0', padding_bottom: '0' })) {
        await page.fill(`[name=${name}]`, value);
      }
      await page.selectOption('[name=type]', 'one_shot');
      await waitFor(async () => ((await page.textContent('#preview-note'))?.includes('at most') ? true : undefined));
      expect(await page.textContent('#cost-value')).toBe('–');
      await close(page);
    });

    it('a number the browser cannot read pauses the preview, which keeps its "Enter a number." and shows no price', async () => {
      const page = await open(DESKTOP, KEY);
      await page.fill('[name=prompt]', 'a harbour at dawn');
      await page.fill('[name=qrContent]', 'https://example.com/harbour');
      await waitFor(async () => ((await page.textContent('#cost-value')) === '2.99 credits' ? true : undefined));
      await page.locator('[name=qrRatio]').pressSequentially('1e');
      await page.click('#create-button');
      await page.waitForSelector('#error-qrRatio:not([hidden])');
      await new Promise((resolve) => setTimeout(resolve, 1000)); // past the preview's pause
      expect(await page.textContent('#error-qrRatio')).toBe('Enter a number.');
      expect(await page.isHidden('#error-qrRatio')).toBe(false);
      expect(await page.textContent('#cost-value')).toBe('–');
      expect(await page.textContent('#preview-note')).toBe('Enter a number in qrRatio to update the preview.');
      await close(page);
    });

    it('carries the prompt between QR workflows, opening More options when a carried value lands there, but not into outpainting', async () => {
      const page = await open(DESKTOP, KEY);
      await page.fill('[name=prompt]', 'a jazz night poster, neon');
      await page.click('details.more summary');
      await page.fill('[name=steps]', '12');
      await page.selectOption('#workflow', 'generate_qr_art_v5s');
      expect(await page.inputValue('[name=prompt]')).toBe('a jazz night poster, neon');
      expect(await page.getAttribute('details.more', 'open')).not.toBeNull();
      await page.selectOption('#workflow', 'outpainting');
      expect(await page.inputValue('[name=prompt]')).toBe('');
      await close(page);
    });
  });
});
