/**
 * npm run bench -- outages: how the API answers while PostgreSQL is frozen or restarting, on a
 * PostgreSQL server and a nats-server of its own (test/helpers/pg-server.ts), with the default
 * DB_CONNECT_TIMEOUT_MS and DB_QUERY_TIMEOUT_MS. Prints the statuses and answer times during a
 * freeze (SIGSTOP of every server process), and for each restart how long the server was away,
 * how soon after it came back a create succeeded, and the statuses six clients saw meanwhile.
 * test/faults/dependency-outages.test.ts asserts the same behaviour; this prints the figures.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { startApiService } from '../../src/runtime/api-service.ts';
import { freePort } from '../../src/runtime/local-nats.ts';
import { natsOnFixedPort } from '../../test/helpers/nats.ts';
import { startPgServer } from '../../test/helpers/pg-server.ts';
import { testConfig } from '../../test/helpers/service.ts';

// It takes no options: a flag given is a wrong call (exit 2), not ignored while the whole bench runs.
parseArgs({ options: {}, strict: true });

const KEY = 'key-bench-outages-0123456789abcdef0123';
const storeDir = await mkdtemp(path.join(tmpdir(), 'qrart-bench-nats-'));
const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-bench-data-'));
const database = await startPgServer();
const nats = natsOnFixedPort(await freePort(), storeDir);
await nats.start();
const config = testConfig(dataDir, database.url, { API_KEYS: `bench:${KEY}:100000`, READ_CACHE_TTL_MS: '0', API_KEY_CACHE_TTL_MS: '0' });
const api = await startApiService({ config, natsUrl: nats.url, logger: pino({ level: 'silent' }) });

const body = JSON.stringify({ workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: 'https://example.com' });
async function call(method: string, urlPath: string, payload?: string): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  const response = await fetch(`${api.address}${urlPath}`, { method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: payload });
  await response.text();
  return { status: response.status, ms: Date.now() - started };
}
const create = () => call('POST', '/v1/predictions/queue', body);

await create();
database.pause();
const frozen = await Promise.all([
  ...Array.from({ length: 20 }, create),
  ...Array.from({ length: 10 }, () => call('GET', '/v1/predictions?limit=5')),
  call('GET', '/readyz'),
]);
database.resume();
const times = frozen.map((answer) => answer.ms).sort((a, b) => a - b);
console.log(
  `frozen PostgreSQL, ${frozen.length} requests: statuses ${[...new Set(frozen.map((a) => a.status))].join(',')}; answered in ${times[0]} / ${times[Math.floor(times.length / 2)]} / ${times.at(-1)} ms (min / median / max)`,
);

for (const mode of ['immediate', 'fast', 'immediate'] as const) {
  const statuses: Record<number, number> = {};
  let running = true;
  const load = Array.from({ length: 6 }, async () => {
    while (running) {
      const { status } = await create();
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const stopping = Date.now();
  await database.restart(mode);
  const up = Date.now();
  while ((await create()).status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
  const served = Date.now();
  running = false;
  await Promise.all(load);
  console.log(`${mode} restart: server away ${up - stopping} ms, first create served ${served - up} ms after it was back; statuses meanwhile ${JSON.stringify(statuses)}`);
}

await api.stop();
await nats.stop();
await database.destroy();
await rm(storeDir, { recursive: true, force: true });
await rm(dataDir, { recursive: true, force: true });
