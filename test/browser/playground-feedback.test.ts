import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, noBrowserReason, openPlayground } from '../helpers/browser.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

/**
 * What the playground says while a form is filled in and after: messages that stay as long as
 * they are true, a price that is never the previous form's, the key's own problems, and a service
 * away while the preview is drawn. Debian's chromium against the API, NATS and the database (no
 * worker: results are injected with page.route where one is needed).
 */

// The callbacks given to page.evaluate run in the page; the project compiles without the DOM types.
declare const document: any;

const KEY = 'key-feedback-0123456789abcdef0123456789ab';
const USER = 'fay';
const FAKE_ID = '00000000-0000-4000-8000-0000000fee0d';

describe.skipIf(!!noBrowserReason)('playground feedback in a browser', () => {
  let stack: TestStack;
  let browser: Browser;

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `${USER}:${KEY}:100` } });
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await Promise.race([browser?.close(), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    await stack?.stop();
  }, 120_000);

  const open = (key?: string): Promise<Page> => openPlayground(browser, stack.baseUrl, key !== undefined ? { key } : {});
  const close = (page: Page) => page.context().close();
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const outpainting = (more: Record<string, unknown> = {}) => ({
    id: FAKE_ID,
    userId: USER,
    status: 'executed',
    input: { workflow: 'outpainting', image: 'https://example.com/a.png', image_width: 512, image_height: 512, padding_left: 64 },
    output: { images: [`${stack.baseUrl}/files/${FAKE_ID}/0.png`], caption: 'a field of poppies' },
    error: null,
    isScanables: [],
    credits: 2,
    refunded: false,
    createdAt: new Date().toISOString(),
    startedAt: new Date().toISOString(),
    completedAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    ...more,
  });

  it("Create's \"prompt is required\" stays through the live preview, and goes once the prompt is typed", async () => {
    const page = await open(KEY);
    await page.fill('[name=qrContent]', 'https://example.com/menu');
    await waitFor(async () => ((await page.textContent('#cost-value'))?.endsWith('credits') ? true : undefined));
    // Create moves the focus, whose change schedules a preview; the preview fills a blank prompt in to draw.
    await page.click('#create-button');
    await page.waitForSelector('#error-prompt:not([hidden])');
    await pause(1500);
    expect(await page.textContent('#error-prompt')).toContain('prompt');
    expect(await page.isHidden('#error-prompt')).toBe(false);
    // Another field's edit does not clear it either.
    await page.selectOption('[name=qrCodePartern]', 'c2');
    await pause(1500);
    expect(await page.isHidden('#error-prompt')).toBe(false);
    await page.fill('[name=prompt]', 'a lighthouse');
    await waitFor(async () => ((await page.isHidden('#error-prompt')) ? true : undefined));
    await close(page);
  });

  it('from a change until its price comes, the price reads "…" (its live region busy), never the previous form\'s', async () => {
    const page = await open(KEY);
    await page.fill('[name=prompt]', 'a bakery sign');
    await page.fill('[name=qrContent]', 'https://example.com/bread');
    await waitFor(async () => ((await page.textContent('#cost-value')) === '2.99 credits' ? true : undefined));
    await page.selectOption('[name=resolution]', 'HD');
    expect(await page.textContent('#cost-value')).toBe('…');
    expect(await page.getAttribute('#cost', 'aria-busy')).toBe('true');
    await waitFor(async () => ((await page.textContent('#cost-value')) === '4.49 credits' ? true : undefined));
    expect(await page.getAttribute('#cost', 'aria-busy')).toBeNull();
    await close(page);
  });

  it('a preview the service cannot give says so (not "fix the fields") and comes back by itself', async () => {
    const page = await open(KEY);
    await page.route('**/v1/qr/preview', (route) => route.abort('connectionrefused'));
    await page.route('**/v1/predictions/quote', (route) => route.abort('connectionrefused'));
    await page.fill('[name=prompt]', 'a harbour at dawn');
    await page.fill('[name=qrContent]', 'https://example.com/harbour');
    await waitFor(async () => ((await page.textContent('#preview-note'))?.startsWith('Preview unavailable') ? true : undefined));
    expect(await page.textContent('#preview-note')).toContain('trying again in 5 s');
    expect(await page.locator('[aria-invalid="true"]').count()).toBe(0);
    // The service answers again: the layout and price come without another edit.
    await page.unrouteAll();
    await waitFor(async () => ((await page.textContent('#preview-note'))?.startsWith('Picture 768 × 768') ? true : undefined), 15_000);
    expect(await page.textContent('#cost-value')).toBe('2.99 credits');
    await close(page);
  });

  it('while the service is away the preview tries again on one timer, however the typing and the failures interleave', async () => {
    const page = await open(KEY);
    await page.fill('[name=prompt]', 'a harbour at dawn');
    await page.fill('[name=qrContent]', 'https://example.com/h');
    await waitFor(async () => ((await page.textContent('#cost-value'))?.endsWith('credits') ? true : undefined));
    // Each preview fails 300 ms after it is sent, while the next key comes 450 ms after the last:
    // a failure lands inside the next edit's pause.
    const sent: number[] = [];
    await page.route('**/v1/qr/preview', async (route) => {
      sent.push(Date.now());
      await pause(300);
      await route.abort('connectionrefused');
    });
    for (const key of 'arbor') {
      await page.locator('[name=qrContent]').press('End');
      await page.keyboard.type(key);
      await pause(450);
    }
    const typed = Date.now();
    await pause(11_000);
    // One chain: a try about every 5 s (two in 11 s); two chains would send pairs.
    expect(sent.filter((at) => at > typed).length).toBeLessThanOrEqual(3);
    await close(page);
  }, 40_000);

  it('a key holding a character no key has is named beside the key field, and nothing is sent with it', async () => {
    const page = await open(KEY.replace('-', '\u2013'));
    expect(await page.textContent('#error-x-api-key')).toContain('U+2013');
    let creates = 0;
    await page.route('**/v1/predictions/queue', (route) => {
      creates++;
      return route.abort();
    });
    await page.fill('[name=prompt]', 'a lighthouse');
    await page.fill('[name=qrContent]', 'https://example.com/l');
    await page.click('#create-button');
    await pause(300);
    expect(creates).toBe(0);
    expect(await page.textContent('#error-x-api-key')).toContain('U+2013');
    expect(await page.isHidden('#form-error')).toBe(true);
    await close(page);
  });

  it('an outpainting is summed up without a scan count, and Forget takes the result off the screen', async () => {
    const page = await open(KEY);
    await page.route('**/v1/predictions/queue', (route) => route.fulfill({ json: { success: true, data: outpainting() } }));
    await page.selectOption('#workflow', 'outpainting');
    for (const [name, value] of Object.entries({ image: 'https://example.com/a.png', image_width: '512', image_height: '512', padding_left: '64' })) {
      await page.fill(`[name=${name}]`, value);
    }
    await page.click('#create-button');
    await page.waitForSelector('#result-card[data-status="executed"]');
    expect(await page.textContent('#result-message')).toBe('Done. 1 image.');
    await page.click('#key-forget');
    expect(await page.isHidden('#result-card')).toBe(true);
    await close(page);
  });

  it('a change of version opens More options only for a carried value other than its default', async () => {
    const page = await open(KEY);
    await page.fill('[name=prompt]', 'a jazz night poster, neon');
    await page.selectOption('#workflow', 'generate_qr_art_v5s');
    expect(await page.inputValue('[name=prompt]')).toBe('a jazz night poster, neon');
    expect(await page.getAttribute('details.more', 'open')).toBeNull();
    await page.selectOption('#workflow', 'generate_qr_art_v4s');
    expect(await page.getAttribute('details.more', 'open')).toBeNull();
    await close(page);
  });

  it('/playground/index.html, the page\'s own file, sends the browser to /, where its modules resolve', async () => {
    const response = await fetch(`${stack.baseUrl}/playground/index.html`, { redirect: 'manual' });
    expect(response.status).toBe(301);
    expect(response.headers.get('location')).toBe('/');
    const page = await open();
    await page.goto(`${stack.baseUrl}/playground/index.html`);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.evaluate(() => document.location.pathname)).toBe('/');
    await close(page);
  });
});
