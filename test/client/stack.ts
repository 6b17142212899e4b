/**
 * The test stack as a client sees it: output URLs must be fetchable, so the API listens on a
 * port chosen beforehand and PUBLIC_BASE_URL names it (startTestStack's port 0 would put
 * http://localhost:0 into the records).
 */
import { freePort } from '../../src/runtime/local-nats.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

export async function startClientStack(options: { worker?: boolean; env?: Record<string, string> } = {}): Promise<TestStack> {
  const port = await freePort();
  return startTestStack({
    worker: options.worker ?? false,
    env: { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, ...options.env },
  });
}

/** A small, fast generation on the demo models (CPU): v5s, 4 steps, the smallest output (768x768 SD). */
export const SMALL_V5S = {
  workflow: 'generate_qr_art_v5s',
  prompt: 'a koi pond at dusk',
  qrContent: 'https://example.com/client',
  steps: 4,
  resolution: 'SD',
  aspectRatio: '1:1',
} as const;

export const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
