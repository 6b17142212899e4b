import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generateSecret, parseSecret } from '../webhooks/sign.ts';

/**
 * WEBHOOK_SECRET when set; otherwise a secret generated once and kept in DATA_DIR, so
 * receivers keep verifying across restarts of a one-machine install.
 */
export async function resolveWebhookSecret(configured: string | undefined, dataDir: string): Promise<{ secret: string; source: 'env' | 'file' | 'generated'; file?: string }> {
  if (configured) {
    parseSecret(configured);
    return { secret: configured, source: 'env' };
  }
  const file = path.join(dataDir, 'webhook-secret');
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing?.trim()) {
    parseSecret(existing.trim());
    return { secret: existing.trim(), source: 'file', file };
  }
  const secret = generateSecret();
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return { secret, source: 'generated', file };
}
