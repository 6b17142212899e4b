import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Debian's chromium, driven by playwright-core (no browser download: .ci/run installs the
 * `chromium` package). CHROMIUM_PATH overrides where it is looked for.
 */
const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => !!p);

export const chromiumPath: string | undefined = CANDIDATES.find((p) => existsSync(p));

/** Why browser tests are skipped, or undefined when they can run (for describe.skipIf and its message). */
export const noBrowserReason: string | undefined = chromiumPath
  ? undefined
  : `no chromium at ${CANDIDATES.join(' or ')}: install Debian's chromium package (.ci/run does) to run the browser tests`;

if (noBrowserReason) console.warn(`[browser tests skipped] ${noBrowserReason}`);

/** A headless chromium; the caller closes it. */
export async function launchBrowser(): Promise<Browser> {
  if (!chromiumPath) throw new Error(noBrowserReason);
  // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** The playground at `baseUrl` in a fresh browser profile, ready; the key typed in when given. */
export async function openPlayground(
  browser: Browser,
  baseUrl: string,
  options: { viewport?: { width: number; height: number }; key?: string; beforeLoad?: (page: Page) => Promise<void> } = {},
): Promise<Page> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  await options.beforeLoad?.(page);
  page.on('pageerror', (error) => console.error('page error:', error.message));
  await page.goto(`${baseUrl}/`);
  await page.waitForSelector('body[data-ready="true"]');
  if (options.key !== undefined) {
    await page.fill('#api-key', options.key);
    await page.dispatchEvent('#api-key', 'change');
  }
  return page;
}
