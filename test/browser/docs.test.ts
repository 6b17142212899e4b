/**
 * /docs in a real browser against the real service: Swagger UI renders our document from
 * node_modules, its Authorize dialog and Try it out send real, keyed requests, and nothing on
 * the page reaches another origin.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/docs.png (not on CI: the repository's copy
 * changes only when someone means it to).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, noBrowserReason } from '../helpers/browser.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

const KEY = 'key-docs-reader-0123456789abcdef0123';
const SCREENSHOT = path.resolve(import.meta.dirname, '../../docs/screenshots/docs.png');

describe('/docs', () => {
  let stack: TestStack;
  let predictionId: string;

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `docs-reader:${KEY}:100` } });
    const created = await stack.call('POST', '/v1/predictions/queue', {
      key: KEY,
      body: { workflow: 'generate_qr_art_v4s', qrText: 'a lighthouse at dusk', qrContent: 'https://example.com/docs-test', seed: 7 },
    });
    expect(created.status).toBe(200);
    predictionId = created.body.data.id;
  });
  afterAll(async () => stack?.stop());

  describe('over HTTP', () => {
    it('is a page held to a same-origin Content-Security-Policy, loading Swagger UI from this server', async () => {
      const response = await fetch(`${stack.baseUrl}/docs`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      const csp = response.headers.get('content-security-policy') ?? '';
      for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'"]) expect(csp).toContain(directive);
      const html = await response.text();
      const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
      expect(sources.length).toBeGreaterThan(0);
      for (const source of sources) expect(source, source).toMatch(/^\/(?!\/)/);
      // No inline script: everything runs from files, as the policy demands.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    });

    it('serves the Swagger UI files the page needs from node_modules, and nothing else of the package', async () => {
      for (const asset of ['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/init.js']) {
        const response = await fetch(`${stack.baseUrl}${asset}`);
        expect(response.status, asset).toBe(200);
        await response.arrayBuffer();
      }
      // The package's own page and initializer load the petstore demo from petstore.swagger.io.
      for (const asset of ['index.html', 'swagger-initializer.js', 'swagger-ui-bundle.js.map', 'package.json', '', '../package.json']) {
        const response = await fetch(`${stack.baseUrl}/docs/assets/${asset}`);
        expect(response.status, asset).toBe(404);
        await response.arrayBuffer();
      }
    });

    it('keeps /openapi.json', async () => {
      const response = await fetch(`${stack.baseUrl}/openapi.json`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { openapi: string }).openapi).toMatch(/^3\.1\./);
    });

    it('documents only operations the service has', async () => {
      const document = (await stack.call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
      for (const [template, item] of Object.entries(document.paths)) {
        for (const method of Object.keys(item)) {
          const response = await stack.call(method.toUpperCase(), template.replace(/\{[^}]+\}/g, 'no-such-thing'), { key: KEY, body: method === 'post' ? {} : undefined });
          // The router's own 404 says "no route" and its 405 "allowed_methods"; a 404 from the route
          // itself (unknown id) and the outpainting GET's 405 do not.
          expect(`${response.status} ${JSON.stringify(response.body)}`, `${method} ${template}`).not.toMatch(/^404 .*no route|^405 .*allowed_methods/);
        }
      }
    });

    it("answers the documented preview and quote examples as documented", async () => {
      const document = (await stack.call('GET', '/openapi.json')).body;
      const previewOp = document.paths['/v1/qr/preview'].post;
      const layoutFields = Object.keys(document.components.schemas.QrLayout.properties).sort();
      for (const [name, example] of Object.entries<{ value: unknown }>(previewOp.requestBody.content['application/json'].examples)) {
        const response = await fetch(`${stack.baseUrl}/v1/qr/preview`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(example.value) });
        expect(response.status, name).toBe(200);
        expect(response.headers.get('content-type')).toBe('image/png');
        expect(Object.keys(JSON.parse(response.headers.get('x-qr-layout')!)).sort(), name).toEqual(layoutFields);
        expect(Number(response.headers.get('x-credits')), name).toBeGreaterThan(0);
        await response.arrayBuffer();
      }
      const quoteOp = document.paths['/v1/predictions/quote'].post;
      const answer = quoteOp.responses['200'].content['application/json'].example;
      const body = quoteOp.requestBody.content['application/json'].examples[answer.data.workflow].value;
      const response = await stack.call('POST', '/v1/predictions/quote', { body });
      expect(response.status).toBe(200);
      expect(response.body).toEqual(answer);
    });
  });

  describe.skipIf(!!noBrowserReason)('in chromium', () => {
    let browser: Browser;
    let page: Page;
    const requested: string[] = [];
    const keysSent = new Map<string, string | undefined>();
    const problems: string[] = [];

    beforeAll(async () => {
      browser = await launchBrowser();
      page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      page.on('request', (request) => {
        requested.push(request.url());
        if (new URL(request.url()).pathname.startsWith('/v1/')) keysSent.set(new URL(request.url()).pathname, request.headers()['x-api-key']);
      });
      // A CSP refusal or a script error shows up here.
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(String(error)));
      await page.goto(`${stack.baseUrl}/docs`);
      await page.locator('.opblock').first().waitFor();
    });
    afterAll(async () => browser?.close());

    it('renders every operation of the document', async () => {
      const document = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as { paths: object; webhooks: object };
      // The webhook is drawn as an operation too.
      const items = [...Object.values(document.paths), ...Object.values(document.webhooks)] as Record<string, { summary: string }>[];
      const summaries = items.flatMap((item) => Object.values(item).map((op) => op.summary));
      for (const summary of summaries) await expect.poll(() => page.getByText(summary, { exact: true }).count(), { message: summary }).toBeGreaterThan(0);
      await expect.poll(() => page.locator('.opblock').count()).toBe(summaries.length);
    });

    it('takes the key in its Authorize dialog', async () => {
      await page.locator('.auth-wrapper button.authorize').click();
      const dialog = page.locator('.modal-ux');
      await dialog.locator('input').first().fill(KEY);
      await dialog.locator('button.authorize').click();
      await expect.poll(() => dialog.getByText('Authorized').count()).toBeGreaterThan(0);
      await dialog.locator('button.btn-done').click();
      if (process.env.UPDATE_SCREENSHOTS === '1') {
        await mkdir(path.dirname(SCREENSHOT), { recursive: true });
        await page.screenshot({ path: SCREENSHOT });
      }
    });

    it('"List predictions": Try it out → Execute shows the 200 answer with our prediction', async () => {
      const operation = await tryItOut('#operations-predictions-listPredictions');
      await expect.poll(() => operation.locator('.live-responses-table tbody td.response-col_status').first().textContent()).toContain('200');
      await expect.poll(() => operation.locator('.live-responses-table tbody td.response-col_description').first().textContent()).toContain(predictionId);
      expect(keysSent.get('/v1/predictions')).toBe(KEY);
    });

    it('"Get a prediction": Try it out with its id → Execute shows the 200 answer', async () => {
      const operation = await tryItOut('#operations-predictions-getPrediction', async (block) => {
        await block.locator('input[placeholder="predictionId"]').fill(predictionId);
      });
      await expect.poll(() => operation.locator('.live-responses-table tbody td.response-col_status').first().textContent()).toContain('200');
      await expect.poll(() => operation.locator('.live-responses-table tbody td.response-col_description').first().textContent()).toContain('"status"');
      expect(keysSent.get(`/v1/predictions/${predictionId}`)).toBe(KEY);
    });

    it('never requested anything from another origin, and logged no error', () => {
      const origin = new URL(stack.baseUrl).origin;
      expect(requested.length).toBeGreaterThan(3);
      const elsewhere = requested.filter((url) => !url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin);
      expect(elsewhere).toEqual([]);
      expect(problems).toEqual([]);
    });

    /** Expands an operation, presses Try it out, lets `fill` set its parameters, presses Execute. */
    async function tryItOut(selector: string, fill?: (block: ReturnType<Page['locator']>) => Promise<void>) {
      const block = page.locator(selector);
      await block.locator('.opblock-summary-control').click();
      await block.locator('button.try-out__btn').click();
      await fill?.(block);
      await block.locator('button.execute').click();
      return block;
    }
  });
});
