/**
 * An API without WEBHOOK_SECRET signs with a secret kept in its own DATA_DIR. With a shared
 * PostgreSQL (DATABASE_URL) replicas may share the work, each signing with its own secret, and a
 * receiver refuses all but one's deliveries: that start warns. (Run in both CI phases: PGlite,
 * where it does not warn, and PostgreSQL, where it does.)
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { startApiService } from '../../src/runtime/api-service.ts';
import { backend, testDatabaseUrl } from '../helpers/database.ts';
import { startTestNats } from '../helpers/nats.ts';
import { testConfig } from '../helpers/service.ts';

it(`an API without WEBHOOK_SECRET keeps one in DATA_DIR, and warns when it shares a PostgreSQL database (${backend})`, async () => {
  const nats = await startTestNats();
  const database = await testDatabaseUrl();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-secret-'));
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) });
  try {
    const config = testConfig(dataDir, database.url, { WEBHOOK_SECRET: '' });
    expect(config.WEBHOOK_SECRET).toBeUndefined();
    const api = await startApiService({ config, natsUrl: nats.url, logger: pino({ level: 'info' }, sink) });
    await api.stop();
    expect(await readFile(path.join(dataDir, 'webhook-secret'), 'utf8')).toMatch(/^whsec_/);
    const warned = lines.filter((line) => line.level === 40 && line.msg.startsWith('WEBHOOK_SECRET is unset'));
    expect(warned).toHaveLength(backend === 'postgres' ? 1 : 0);
  } finally {
    await nats.stop();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 60_000);
