import { execFileSync, spawn } from 'node:child_process';
import { chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/runtime/local-nats.ts';
import { killWhenTestEnds, processesMentioning, runCliToExit } from '../helpers/processes.ts';
import { scrape } from '../helpers/prometheus.ts';
import { waitFor } from '../helpers/service.ts';

const bin = path.resolve(import.meta.dirname, '../../bin/qr-art.js');
const KEY = 'start-test-key-0123456789abcdef';

describe('qr-art start', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('runs API, worker and a local nats-server; is ready; serves a prediction end to end; exposes both processes\' metrics; refuses a second start on its DATA_DIR; one whose port is taken or whose HOST is not here says so and stops what it started; exits 0 on SIGTERM', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const port = await freePort();
    // Free ports rather than the defaults (9464, 9465): test files run in parallel.
    const [apiMetricsPort, workerMetricsPort] = [await freePort(), await freePort()];
    const env = {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      API_KEYS: `dana:${KEY}:10`,
      LOG_LEVEL: 'info',
      NATS_URL: '',
      METRICS_PORT: String(apiMetricsPort),
      WORKER_METRICS_PORT: String(workerMetricsPort),
    };
    const child = spawn(process.execPath, [bin, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const base = `http://127.0.0.1:${port}`;
    try {
      const ready = await waitFor(async () => {
        const response = await fetch(`${base}/readyz`).catch(() => null);
        return response?.ok ? ((await response.json()) as { checks: Record<string, boolean>; dependencies: Record<string, boolean> }) : undefined;
      }, 45_000, 250);
      expect(ready.checks).toEqual({ worker: true, inference: true });
      expect(ready.dependencies).toEqual({ database: true, nats: true });

      const created = await fetch(`${base}/v1/predictions/queue`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'generate_qr_art_v4s', qrText: 'neon city', qrContent: 'tel:+15551234567' }),
      });
      const { data } = (await created.json()) as { data: { id: string } };
      // A generation on the demo models: seconds alone, more on a busy 2-core machine.
      const done = await waitFor(async () => {
        const got = (await (await fetch(`${base}/v1/predictions/${data.id}`, { headers: { 'x-api-key': KEY } })).json()) as { data: { status: string; isScanables: boolean[] } };
        return got.data.status === 'executed' ? got.data : undefined;
      }, 60_000);
      expect(done.isScanables).toEqual([true]);

      // One process, two endpoints, each with its own series.
      const api = await scrape(`http://127.0.0.1:${apiMetricsPort}/metrics`);
      const worker = await scrape(`http://127.0.0.1:${workerMetricsPort}/metrics`);
      expect(api.value('qrart_http_requests_total', { method: 'POST', route: '/v1/predictions/queue', status: '200' })).toBe(1);
      expect(api.value('qrart_predictions_created_total', { workflow: 'generate_qr_art_v4s' })).toBe(1);
      expect(worker.value('qrart_worker_jobs_total', { workflow: 'generate_qr_art_v4s', outcome: 'executed' })).toBe(1);
      expect(api.types.has('qrart_worker_jobs_total')).toBe(false);
      expect(worker.types.has('qrart_http_requests_total')).toBe(false);
      for (const scraped of [api, worker]) expect(scraped.types.get('process_resident_memory_bytes')).toBe('gauge');

      // A second start on the same DATA_DIR is refused before it starts anything (it would share
      // the NATS store and the database files)...
      const freePorts = async () => ({ PORT: String(await freePort()), METRICS_PORT: String(await freePort()), WORKER_METRICS_PORT: String(await freePort()) });
      const same = await runCliToExit(['start'], { env: { ...env, ...(await freePorts()) } });
      expect(same.code, same.output).toBe(1);
      expect(same.output).toContain(`${path.join(dataDir, 'nats')} is in use by another process`);
      // ...and one on another DATA_DIR whose API port is taken says so and stops what it had started.
      const otherDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
      dirs.push(otherDir);
      const taken = await runCliToExit(['start'], { env: { ...env, ...(await freePorts()), DATA_DIR: otherDir, PORT: String(port) } });
      expect(taken.code, taken.output).toBe(1);
      expect(taken.output).toContain(`port ${port} is already in use`);
      expect(taken.output).toContain('local nats-server started');
      expect(await processesMentioning(path.join(otherDir, 'nats'))).toEqual([]);
      // So does one told to listen on an address this machine does not have (TEST-NET-1).
      const elsewhere = await runCliToExit(['start'], { env: { ...env, ...(await freePorts()), DATA_DIR: otherDir, HOST: '192.0.2.1' } });
      expect(elsewhere.code, elsewhere.output).toBe(1);
      expect(elsewhere.output).toContain('HOST 192.0.2.1 is not an address of this machine');
      expect(elsewhere.output).not.toContain('    at ');
      expect(await processesMentioning(path.join(otherDir, 'nats'))).toEqual([]);
      // The first one still serves.
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(0);
  }, 150_000);

  it('at Ctrl-C finishes the job in hand and says so; at a second Ctrl-C hands it back and stops at once, and the next start runs that job again without waiting out its ack wait; a hangup ends it the same way', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const port = await freePort();
    const env = {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      API_KEYS: `dana:${KEY}:100`,
      LOG_LEVEL: 'info',
      NATS_URL: '',
      METRICS_PORT: 'off',
      WORKER_METRICS_PORT: 'off',
      // A job left unacked goes back to the queue this long after the worker's last heartbeat:
      // longer than the next start waits below, so only a job handed back comes back in time.
      JOB_ACK_WAIT_MS: '60000',
    };
    const base = `http://127.0.0.1:${port}`;
    // Each start leads its own process group, as a shell's foreground job does, so that a signal
    // to the group is what Ctrl-C in a terminal sends: to every process of the job at once.
    const startService = () => {
      const child = spawn(process.execPath, [bin, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      const log = { text: '' };
      child.stdout.on('data', (chunk) => (log.text += chunk));
      child.stderr.on('data', (chunk) => (log.text += chunk));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      const ctrlC = () => process.kill(-child.pid!, 'SIGINT');
      const ready = () => waitFor(async () => ((await fetch(`${base}/readyz`).catch(() => null))?.ok ? true : undefined), 45_000, 250);
      return { child, log, exited, ctrlC, ready };
    };
    const prediction = async (id: string) =>
      ((await (await fetch(`${base}/v1/predictions/${id}`, { headers: { 'x-api-key': KEY } })).json()) as { data: { status: string; isScanables: boolean[] } }).data;
    // The demo graphs' longest v5 run at SD: long enough to be in hand when the signals come.
    const createExecuting = async () => {
      const created = await fetch(`${base}/v1/predictions/queue`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'generate_qr_art_v5', prompt: 'a koi pond', qrContent: 'https://example.com', steps: 50, batchSize: 4 }),
      });
      const { data } = (await created.json()) as { data: { id: string } };
      await waitFor(async () => ((await prediction(data.id)).status === 'executing' ? true : undefined), 30_000, 100);
      return data.id;
    };
    const executed = (id: string, withinMs = 120_000) =>
      waitFor(async () => {
        const got = await prediction(id).catch(() => undefined);
        return got?.status === 'executed' ? got : undefined;
      }, withinMs, 500);
    const starts: ReturnType<typeof startService>[] = [];

    try {
      // One Ctrl-C: the worker finishes the job (its local nats-server, in its own group, is not
      // signalled and takes the results), then everything stops.
      const first = startService();
      starts.push(first);
      await first.ready();
      const finished = await createExecuting();
      first.ctrlC();
      expect(await first.exited, first.log.text).toEqual({ code: 0, signal: null });
      expect(first.log.text).toContain('shutting down once the 1 job(s) in hand finish; SIGINT again stops now');
      expect(first.log.text).toMatch(new RegExp(`"predictionId":"${finished}".*"outcome":"images".*"msg":"job done"`));

      // Two: it stops at once and dies of the signal (a shell's 130), not of an abort in native code.
      const second = startService();
      starts.push(second);
      await second.ready();
      expect((await executed(finished)).isScanables).toHaveLength(4);
      const abandoned = await createExecuting();
      second.ctrlC();
      await waitFor(async () => (second.log.text.includes('shutting down once the 1 job(s) in hand finish') ? true : undefined), 10_000, 50);
      second.ctrlC();
      expect(await second.exited, second.log.text).toEqual({ code: null, signal: 'SIGINT' });
      expect(second.log.text).toContain('stopping now; the 1 unfinished job(s) were handed back to the queue');
      // Its nats-server, told to stop on the way out, is gone moments later.
      await waitFor(async () => ((await processesMentioning(path.join(dataDir, 'nats'))).length === 0 ? true : undefined), 10_000, 100);

      // Nothing is lost: the next start runs the abandoned job again, at once, not after its ack
      // wait (60 s). The killed start released its store locks, so this one did not wait for them
      // to go stale.
      const third = startService();
      starts.push(third);
      expect((await executed(abandoned, 40_000)).isScanables).toHaveLength(4);
      expect(third.log.text).not.toContain('is locked by another process');
      // A closed terminal (a hangup to the group) ends it at once, its nats-server with it, and
      // hands back its job as a second Ctrl-C does.
      const hungUp = await createExecuting();
      process.kill(-third.child.pid!, 'SIGHUP');
      expect(await third.exited, third.log.text).toEqual({ code: null, signal: 'SIGHUP' });
      expect(third.log.text).toContain('stopping now; the 1 unfinished job(s) were handed back to the queue');
      await waitFor(async () => ((await processesMentioning(path.join(dataDir, 'nats'))).length === 0 ? true : undefined), 10_000, 100);
      const fourth = startService();
      starts.push(fourth);
      expect((await executed(hungUp, 40_000)).isScanables).toHaveLength(4);
      process.kill(-fourth.child.pid!, 'SIGHUP');
      expect(await fourth.exited, fourth.log.text).toEqual({ code: null, signal: 'SIGHUP' });
      expect(fourth.log.text).toContain('"msg":"stopping now"');
      await waitFor(async () => ((await processesMentioning(path.join(dataDir, 'nats'))).length === 0 ? true : undefined), 10_000, 100);
    } finally {
      for (const { child } of starts) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 300_000);

  it('a Ctrl-C before it is up stops it at once, its local nats-server too', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', NATS_URL: '', METRICS_PORT: 'off', WORKER_METRICS_PORT: 'off' };
    const child = spawn(process.execPath, [bin, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let log = '';
    child.stdout.on('data', (chunk) => (log += chunk));
    child.stderr.on('data', (chunk) => (log += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      // The worker loads its graphs after the local server is up: the window where this matters.
      await waitFor(async () => (log.includes('local nats-server started') ? true : undefined), 30_000, 20);
      expect(log).not.toContain('qr-art is up');
      process.kill(-child.pid!, 'SIGINT');
      expect(await exited, log).toEqual({ code: null, signal: 'SIGINT' });
      await waitFor(async () => ((await processesMentioning(path.join(dataDir, 'nats'))).length === 0 ? true : undefined), 10_000, 100);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 60_000);

  it("a DATA_DIR it cannot write, JETSTREAM_REPLICAS above 1 without a cluster, the worker's port on one of the API's, or a store nats-server cannot use, stops it with one line", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const notADir = path.join(dataDir, 'a-file');
    await writeFile(notADir, 'not a directory');
    const base = { ...process.env, PORT: '0', NATS_URL: '', METRICS_PORT: 'off', WORKER_METRICS_PORT: 'off' };
    const file = await runCliToExit(['start'], { env: { ...base, DATA_DIR: notADir } });
    expect(file.code).toBe(1);
    expect(file.stderr.trim()).toMatch(/^cannot use .*a-file\/nats \(ENOTDIR\): DATA_DIR must name a directory this user can write$/);
    const replicas = await runCliToExit(['start'], { env: { ...base, DATA_DIR: dataDir, JETSTREAM_REPLICAS: '3' } });
    expect(replicas.code).toBe(1);
    expect(replicas.stderr.trim()).toBe('JETSTREAM_REPLICAS=3 needs a NATS cluster (NATS_URL); the local nats-server of `start` is one server: unset it or set 1');
    // Found before anything starts, not at bind after the models loaded; 9465 is start's own default for the worker.
    const shared = await runCliToExit(['start'], { env: { ...base, DATA_DIR: dataDir, METRICS_PORT: '9465', WORKER_METRICS_PORT: '' } });
    expect(shared.code).toBe(1);
    expect(shared.stderr.trim()).toBe("WORKER_METRICS_PORT is 9465, the same port as METRICS_PORT; under `start` the worker's port must differ from the API's two: set another, or off");
    expect(await readdir(dataDir)).toEqual(['a-file']);
    // A store the local nats-server cannot use: its own reason, in one line, not a stack.
    await mkdir(path.join(dataDir, 'broken', 'nats'), { recursive: true });
    await writeFile(path.join(dataDir, 'broken', 'nats', 'jetstream'), 'a file where a folder belongs');
    const store = await runCliToExit(['start'], { env: { ...base, DATA_DIR: path.join(dataDir, 'broken') } });
    expect(store.code).toBe(1);
    expect(store.stderr.trim()).toMatch(/^the local nats-server \(.*nats-server\) stopped at start \(exit 1\): .*storage directory is not a directory; its store is .*broken\/nats$/);
  }, 60_000);

  it('a local nats-server that dies under it (the OOM killer) is said, and start stops with exit 1 instead of serving nothing', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const port = await freePort();
    const env = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', NATS_URL: '', METRICS_PORT: 'off', WORKER_METRICS_PORT: 'off', LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
    const child = spawn(process.execPath, [bin, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    killWhenTestEnds(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await waitFor(async () => ((await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.ok ? true : undefined), 60_000, 250);
    process.kill(Number(await readFile(path.join(dataDir, 'nats', 'nats-server.pid'), 'utf8')), 'SIGKILL');
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 30_000))]);
    expect(code, output).toBe(1);
    expect(output).toContain('the local nats-server killed by SIGKILL; qr-art cannot go on without it: stopping (start it again)');
  }, 120_000);

  // Root writes anywhere: the folder is made unwritable for the user the command runs as (nobody).
  it.skipIf(process.getuid?.() !== 0)('a pglite folder this user cannot write (left by a start as root) is one line naming it, not an Emscripten stack', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const nobody = { uid: Number(execFileSync('id', ['-u', 'nobody']).toString()), gid: Number(execFileSync('id', ['-g', 'nobody']).toString()) };
    await chown(dataDir, nobody.uid, nobody.gid);
    await mkdir(path.join(dataDir, 'pglite'), { mode: 0o755 });
    const run = await runCliToExit(['keys', 'list'], { env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '' }, cwd: tmpdir(), user: nobody });
    expect(run.code, run.output).toBe(1);
    expect(run.stderr.trim()).toBe(`cannot use ${path.join(dataDir, 'pglite')} (EACCES): DATA_DIR must name a directory this user can write`);
  }, 60_000);

  it('start, serve and worker take no arguments: --help explains, anything else exits 2 naming it, and nothing starts', async () => {
    const dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'qrart-start-')), 'data');
    dirs.push(path.dirname(dataDir));
    const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', NATS_URL: '' };
    const help = await runCliToExit(['start', '--help'], { env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('every setting is an environment variable');
    const port = await runCliToExit(['serve', '--port', '9000'], { env });
    expect(port.code).toBe(2);
    expect(port.stderr).toContain("qr-art serve takes no arguments, got '--port 9000'");
    expect((await runCliToExit(['worker', 'now'], { env })).code).toBe(2);
    // A worker listens on no PORT: its example names the setting it does read.
    const workerHelp = await runCliToExit(['worker', '--help'], { env });
    expect(workerHelp.stdout).toContain('e.g. WORKER_METRICS_PORT=9465 qr-art worker');
    // keys and generate: help needs no configuration, so a bad setting does not hide it.
    for (const command of [['keys', 'create', '--help'], ['generate', '--help']]) {
      const shown = await runCliToExit(command, { env: { ...env, PORT: 'abc' } });
      expect(shown.code, command.join(' ')).toBe(0);
      expect(shown.stdout).toMatch(/^qr-art (keys|generate)/);
    }
    // An unknown action says so, on stderr.
    for (const [command, said] of [[['models', 'chek'], "unknown action 'chek'"], [['qr', 'foo'], "unknown action 'foo': qr-art qr has render"]] as const) {
      const typo = await runCliToExit([...command], { env });
      expect(typo.code).toBe(1);
      expect(typo.stdout).toBe('');
      expect(typo.stderr.split('\n')[0]).toBe(said);
    }
    await expect(stat(dataDir)).rejects.toThrow(); // no store was made
  }, 30_000);

  it('explains how to install nats-server when the binary is missing', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-start-'));
    dirs.push(dataDir);
    const missing = await runCliToExit(['start'], { env: { ...process.env, DATA_DIR: dataDir, PORT: '0', NATS_URL: '', NATS_SERVER_BIN: '/nonexistent/nats-server' } });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('apt-get install -y nats-server');
  }, 30_000);
});
