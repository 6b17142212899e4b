import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
