/**
 * API throughput and latency against a bare Fastify route measured in the same run.
 * The servers run in child processes; the load generator (autocannon) runs here.
 *   npm run bench -- api [--seconds 10] [--connections 32] [--database-url postgres://…]
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { freePort, startLocalNats } from '../../src/runtime/local-nats.ts';
import { BenchUsageError } from './usage-error.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '32' }, 'database-url': { type: 'string' } },
  allowPositionals: true,
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
if (!(seconds > 0 && Number.isInteger(connections) && connections >= 1)) throw new BenchUsageError('need --seconds > 0 and --connections >= 1 (a whole number)');
const KEY = 'bench-key-0123456789abcdef0123456789';
const root = path.resolve(import.meta.dirname, '../..');

interface Measured {
  name: string;
  requestsPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function load(name: string, options: autocannon.Options): Promise<Measured> {
  const result = await autocannon({ connections, duration: seconds, ...options });
  return { name, requestsPerSec: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors };
}

function waitForMessage(child: ChildProcess): Promise<{ address: string }> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as { address: string }));
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
}

async function waitForReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok).catch(() => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('service did not become ready');
}

const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-bench-'));
const port = await freePort();
const bare = fork(path.join(root, 'scripts/bench/bare-server.ts'), { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
const nats = await startLocalNats(path.join(dataDir, 'nats'));
// The API alone (no worker): jobs queue up in JetStream, which is what a busy API sees.
const service = spawn(process.execPath, [path.join(root, 'bin/qr-art.js'), 'serve'], {
  env: { ...process.env, ...(values['database-url'] ? { DATABASE_URL: values['database-url'] } : {}), NATS_URL: nats.url, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', API_KEYS: `bench:${KEY}:100000000` },
  stdio: ['ignore', 'inherit', 'inherit'],
});
try {
  const bareUrl = (await waitForMessage(bare)).address;
  const apiUrl = `http://127.0.0.1:${port}`;
  await waitForReady(apiUrl);

  const createBody = JSON.stringify({ workflow: 'generate_qr_art_v4', qrText: 'a lighthouse at dusk', qrContent: 'https://example.com/bench' });
  const seed = await fetch(`${apiUrl}/v1/predictions/queue`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: createBody });
  const predictionId = ((await seed.json()) as { data: { id: string } }).data.id;

  const results: Measured[] = [];
  results.push(await load('bare GET (fastify)', { url: `${bareUrl}/bare` }));
  results.push(await load('get prediction', { url: `${apiUrl}/v1/predictions/${predictionId}`, headers: { 'x-api-key': KEY } }));
  results.push(await load('bare POST (fastify)', { url: `${bareUrl}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body: createBody }));
  results.push(await load('create prediction', { url: `${apiUrl}/v1/predictions/queue`, method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: createBody }));

  const [bareGet, get, barePost, create] = results as [Measured, Measured, Measured, Measured];
  console.log(`\nAPI benchmark: ${seconds}s per run, ${connections} connections, database ${values['database-url'] ? 'PostgreSQL' : 'PGlite'}, NATS local`);
  console.table(results.map((r) => ({ route: r.name, 'req/s': Math.round(r.requestsPerSec), 'p50 ms': r.p50, 'p99 ms': r.p99, 'non-2xx': r.non2xx })));
  console.log(`get / bare GET throughput:     ${(get.requestsPerSec / bareGet.requestsPerSec).toFixed(3)} (target >= 0.50)`);
  console.log(`create / bare POST throughput: ${(create.requestsPerSec / barePost.requestsPerSec).toFixed(3)} (target >= 0.25)`);
} finally {
  bare.kill('SIGTERM');
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
  await nats.stop();
  await rm(dataDir, { recursive: true, force: true });
}
