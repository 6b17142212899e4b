import path from 'node:path';
import { ConfigError, DEFAULT_DATA_DIR, loadConfig, type Config } from './config.ts';
import { createLogger, resolveLogFormat, type Logger } from './logger.ts';
import { startApiService } from './runtime/api-service.ts';
import { killLocalServers, LocalNatsStartError, NatsServerMissingError, startLocalNats, type LocalNats } from './runtime/local-nats.ts';
import { startWorkerService, type WorkerService } from './runtime/worker-service.ts';
import { ManifestError } from './pipeline/manifest.ts';
import { InferenceInitError } from './worker/inference-protocol.ts';
import { DirInUseError, LOCK_WAIT_MS } from './util/dir-lock.ts';
import { DependencyUnavailableError } from './util/unavailable.ts';

const USAGE = `qr-art <command>

Commands:
  start     everything on one machine: API, one worker, a local nats-server (unless NATS_URL), embedded database
  serve     the HTTP API and its background consumers (needs NATS_URL)
  worker    a worker daemon pulling jobs (needs NATS_URL)
  keys      manage users, API keys and credits (qr-art keys --help)
  qr        qr render: write a v5 control image to preview a layout (qr-art qr --help)
  generate  one QR art generation on this machine, no server (qr-art generate --help)
  predict   a prediction on a qr-art server through the client: create, wait with progress, download (qr-art predict --help)
  models    models check | fuse | scale-controlnet | vae-mean: check a deployment's graphs, fuse a ControlNet and a UNet, rewrite an export (qr-art models --help)

Configuration is read from the environment: see README.md.`;

const SERVICE_USAGE: Readonly<Record<string, string>> = {
  start: 'qr-art start: the API, one worker, a local nats-server (unless NATS_URL) and the embedded database (unless DATABASE_URL), on one machine',
  serve: 'qr-art serve: the HTTP API and its background consumers; needs NATS_URL',
  worker: 'qr-art worker: a worker daemon pulling jobs; needs NATS_URL',
};

const asksForHelp = (args: readonly string[]): boolean => args.some((arg) => arg === '--help' || arg === '-h') || args[0] === 'help';

/** start, serve and worker take no arguments: help for -h/--help, else exit 2 naming the argument. */
function serviceArguments(command: string, args: string[]): number {
  const example = command === 'worker' ? 'WORKER_METRICS_PORT=9465' : 'PORT=9000';
  const usage = `${SERVICE_USAGE[command]}\n\nIt takes no arguments: every setting is an environment variable (README.md, Configuration), e.g. ${example} qr-art ${command}`;
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h' || args[0] === 'help')) {
    console.log(usage);
    return 0;
  }
  console.error(`qr-art ${command} takes no arguments, got '${args.join(' ')}'\n\n${usage}`);
  return 2;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'start':
      case 'serve':
      case 'worker': {
        // Their settings are environment variables: an argument (a --port, a --help) would
        // otherwise be ignored and the service started as it is.
        if (rest.length > 0) return serviceArguments(command, rest);
        const config = loadConfig();
        return await (command === 'start' ? start(config) : command === 'serve' ? serve(config) : worker(config));
      }
      case 'keys': {
        const { keysCommand, KEYS_USAGE } = await import('./cli/keys.ts');
        // Help needs no configuration: a bad server setting must not hide it.
        if (asksForHelp(rest)) return (console.log(KEYS_USAGE), 0);
        return await keysCommand(rest, loadConfig());
      }
      case 'models': {
        const { modelsCommand } = await import('./cli/models.ts');
        return await modelsCommand(rest);
      }
      case 'generate': {
        const { generateCommand } = await import('./cli/generate.ts');
        return await generateCommand(rest, asksForHelp(rest) ? {} : loadConfig());
      }
      case 'predict': {
        const { predictCommand } = await import('./cli/predict.ts');
        return await predictCommand(rest, process.env);
      }
      case 'qr': {
        const { qrCommand } = await import('./cli/qr-render.ts');
        return await qrCommand(rest);
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        console.log(USAGE);
        return command === undefined ? 1 : 0;
      default:
        console.error(`unknown command '${command}'\n\n${USAGE}`);
        return 1;
    }
  } catch (error) {
    if (error instanceof ConfigError || error instanceof NatsServerMissingError || error instanceof LocalNatsStartError || error instanceof ManifestError || error instanceof InferenceInitError || error instanceof DirInUseError) {
      console.error(error.message);
      return 1;
    }
    const { code, path: where } = error as NodeJS.ErrnoException;
    if (where !== undefined && (code === 'EACCES' || code === 'EPERM' || code === 'EROFS' || code === 'ENOTDIR' || code === 'EEXIST')) {
      // A folder or file it cannot make or write: one line, not a stack; under DATA_DIR (the
      // stores, locks and secret), which setting to change.
      const dataDir = path.resolve(process.env.DATA_DIR || DEFAULT_DATA_DIR);
      const inDataDir = path.resolve(where) === dataDir || path.resolve(where).startsWith(dataDir + path.sep);
      console.error(`cannot use ${where} (${code})${inDataDir ? ': DATA_DIR must name a directory this user can write' : ''}`);
      return 1;
    }
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG') {
      // A write that could not finish (a fused model's gigabytes, the stores): one line, not a stack.
      const why = { ENOSPC: 'no space left on the device', EDQUOT: 'the disk quota is used up', EFBIG: 'the file grew past what this system allows' }[code];
      console.error(`cannot write${where ? ` ${where}` : ''}: ${why} (${code})`);
      return 1;
    }
    if (code === 'EADDRINUSE') {
      const { port } = error as { port?: number };
      console.error(`port ${port} is already in use (another qr-art running?): stop what listens there, or choose other ports with PORT, METRICS_PORT and WORKER_METRICS_PORT`);
      return 1;
    }
    const { hostname, address, syscall } = error as { hostname?: string; address?: string; syscall?: string };
    const host = process.env.HOST;
    const hostNotHere = code === 'EADDRNOTAVAIL' || ((code === 'ENOTFOUND' || code === 'EAI_AGAIN') && syscall === 'getaddrinfo');
    if (hostNotHere && host !== undefined && (hostname === host || address === host)) {
      console.error(`HOST ${host} is not an address of this machine (${code}): name one of its addresses, or 0.0.0.0 for all of them`);
      return 1;
    }
    if (error instanceof DependencyUnavailableError) {
      // At start: the database stayed unreachable for DB_STARTUP_WAIT_MS (or keys could not reach it).
      console.error(`${error.message}: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}`);
      return 1;
    }
    if (String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
      console.error((error as Error).message);
      return 2;
    }
    throw error;
  }
}

function requireNatsUrl(config: Config): string {
  if (!config.NATS_URL) throw new ConfigError('NATS_URL is required for this command (or use `qr-art start`, which runs a local nats-server)');
  return config.NATS_URL;
}

/** The logger of a long-running command, in the format LOG_FORMAT and the terminal call for. */
export function commandLogger(config: Config, command: 'start' | 'serve' | 'worker', name: string): Logger {
  return createLogger(config.LOG_LEVEL, name, { format: resolveLogFormat(config.LOG_FORMAT, command, process.stdout.isTTY === true) });
}

async function serve(config: Config): Promise<number> {
  const logger = commandLogger(config, 'serve', 'api');
  const api = await startApiService({ config, natsUrl: requireNatsUrl(config), logger });
  logger.info({ address: api.address, metrics: metricsUrl(api.metricsAddress) }, 'qr-art API is up');
  return untilSignal(logger, { stoppers: [() => api.stop()] });
}

async function worker(config: Config): Promise<number> {
  const logger = commandLogger(config, 'worker', 'worker');
  const service = await startWorkerService({ config, natsUrl: requireNatsUrl(config), logger });
  void service.fatal.then((error) => exitOnDeviceFault(logger, error, [() => service.stop()], config.JOB_ABORT_GRACE_MS));
  return untilSignal(logger, { stoppers: [() => service.stop()], drain: drainOf(service, config) });
}

function drainOf(service: WorkerService, config: Config): Drain {
  return { jobsInHand: () => service.daemon.inHand(), handBackAll: () => service.daemon.handBackAll(), ackWaitMs: config.JOB_ACK_WAIT_MS };
}

/** The worker's metrics port under `start` when WORKER_METRICS_PORT is unset: next to the API's 9464, as in the deployment. */
export const START_WORKER_METRICS_PORT = 9465;

/** A listener's /metrics URL, or 'off'. */
function metricsUrl(address: string | undefined): string {
  return address ? `${address}/metrics` : 'off';
}

/**
 * `start` listens on three fixed ports in one process; two of them alike would be found only at
 * bind, after the worker loaded its models, as "already in use" by ourselves. (config.ts holds
 * PORT against METRICS_PORT for every command; the worker's port is only `start`'s to compare.)
 */
function refuseSharedPorts(config: Config): void {
  const worker = config.WORKER_METRICS_PORT;
  if (worker === undefined || worker === 'off' || worker === 0) return;
  const clash = config.PORT === worker ? 'PORT' : config.METRICS_PORT === worker ? 'METRICS_PORT' : undefined;
  if (clash) {
    throw new ConfigError(`WORKER_METRICS_PORT is ${worker}, the same port as ${clash}; under \`start\` the worker's port must differ from the API's two: set another, or off`);
  }
}

async function start(given: Config): Promise<number> {
  // Both processes' metrics, each on its port, as in a deployment (WORKER_METRICS_PORT=off turns the worker's off).
  const config: Config = { ...given, WORKER_METRICS_PORT: given.WORKER_METRICS_PORT ?? START_WORKER_METRICS_PORT };
  refuseSharedPorts(config);
  const logger = commandLogger(config, 'start', 'qr-art');
  // What has started, last first: the order to stop in, at a signal or when a later part fails to start.
  const stoppers: (() => Promise<unknown>)[] = [];
  let drain: Drain;
  let localNats: LocalNats | undefined;
  // A signal before untilSignal takes over (models loading, migrations): nothing to finish yet,
  // so stop at once, the local nats-server with this process (detached, it would outlive it).
  const dieDuringStart = (signal: NodeJS.Signals): void => {
    killLocalServers(); // the one still starting up too
    for (const name of START_SIGNALS) process.removeListener(name, dieDuringStart);
    process.kill(process.pid, signal);
  };
  for (const name of START_SIGNALS) process.on(name, dieDuringStart);
  try {
    let natsUrl = config.NATS_URL;
    if (!natsUrl && config.JETSTREAM_REPLICAS > 1) {
      throw new ConfigError(`JETSTREAM_REPLICAS=${config.JETSTREAM_REPLICAS} needs a NATS cluster (NATS_URL); the local nats-server of \`start\` is one server: unset it or set 1`);
    }
    if (!natsUrl) {
      const storeDir = path.join(config.DATA_DIR, 'nats');
      const nats: LocalNats = await startLocalNats(storeDir, {
        binary: config.NATS_SERVER_BIN,
        onLockWait: () => logger.warn({ dir: storeDir }, `DATA_DIR is locked by another process (or one that was just killed); waiting up to ${LOCK_WAIT_MS / 1000} s`),
        onLeftoverStopped: (pid) => logger.warn({ dir: storeDir, leftoverPid: pid }, 'stopped the nats-server that a killed qr-art start had left running on this store'),
      });
      stoppers.unshift(() => nats.stop());
      localNats = nats;
      natsUrl = nats.url;
      logger.info({ url: nats.url, monitor: nats.monitorUrl }, 'local nats-server started');
    }
    const workerService = await startWorkerService({ config, natsUrl, logger: logger.child({ role: 'worker' }) });
    stoppers.unshift(() => workerService.stop());
    drain = drainOf(workerService, config);
    const api = await startApiService({
      config,
      natsUrl,
      logger: logger.child({ role: 'api' }),
      extraReadiness: { worker: workerService.readiness.pulling, inference: workerService.readiness.inference },
    });
    stoppers.unshift(() => api.stop());
    logger.info(
      { address: api.address, docs: `${api.address}/docs`, apiMetrics: metricsUrl(api.metricsAddress), workerMetrics: metricsUrl(workerService.httpAddress) },
      'qr-art is up',
    );
    void workerService.fatal.then((error) => exitOnDeviceFault(logger, error, stoppers, config.JOB_ABORT_GRACE_MS));
    // Everything here talks through the local server: without it nothing works, and readiness alone would not say why.
    void localNats?.unexpectedExit.then((how) =>
      exitAfterStopping(logger, `the local nats-server ${how}; qr-art cannot go on without it: stopping (start it again)`, undefined, stoppers, config.JOB_ABORT_GRACE_MS, 1),
    );
  } catch (error) {
    for (const stop of stoppers) await stop().catch((err) => logger.error({ err }, 'error while stopping after a failed start'));
    throw error;
  } finally {
    for (const name of START_SIGNALS) process.removeListener(name, dieDuringStart);
  }
  return untilSignal(logger, { stoppers, drain, ...(localNats ? { killNow: () => localNats.kill() } : {}) });
}

const START_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Exit code of a worker that gave its device up (its jobs were handed back first). */
export const DEVICE_FAULT_EXIT_CODE = 3;

/**
 * The device failed or the inference thread is stuck: every job that needed the device has been
 * handed back; stop what can be stopped (jobs past the device are delivered) and exit non-zero so
 * the orchestrator replaces the pod. A thread stuck in native code keeps even process.exit() from
 * finishing, so past a grace period the process kills itself.
 */
function exitOnDeviceFault(logger: Logger, error: Error, stoppers: (() => Promise<unknown>)[], graceMs: number): Promise<never> {
  return exitAfterStopping(logger, 'giving the device up: the jobs that needed it were handed back; exiting', error, stoppers, graceMs, DEVICE_FAULT_EXIT_CODE);
}

/** Says why, stops what can be stopped within graceMs (then kills the process), and exits with `code`. */
async function exitAfterStopping(logger: Logger, message: string, error: Error | undefined, stoppers: (() => Promise<unknown>)[], graceMs: number, code: number): Promise<never> {
  logger.fatal(error ? { err: error } : {}, message);
  const stopped = (async () => {
    for (const stop of stoppers) await stop().catch((err) => logger.error({ err }, 'error during shutdown'));
    return true;
  })();
  const done = await Promise.race([stopped, new Promise<false>((resolve) => setTimeout(() => resolve(false), graceMs).unref())]);
  if (!done) {
    logger.fatal('shutdown did not finish in time (a thread stuck in native code, or a job past the device still finishing); killing the process');
    process.kill(process.pid, 'SIGKILL');
  }
  process.exit(code);
}

/** What a worker's shutdown waits for: its jobs in hand, and when the queue delivers an abandoned one again. */
interface Drain {
  jobsInHand: () => number;
  /** At a second signal: hands the jobs in hand back to the queue (how many), before the process dies. */
  handBackAll: () => Promise<number>;
  ackWaitMs: number;
}

/** How long a second signal waits for the queue to take the jobs handed back before dying anyway. */
const HAND_BACK_WAIT_MS = 2000;

/** How a command stops at a signal. */
interface Shutdown {
  /** Run in order at the first signal: the graceful stop. */
  stoppers: (() => Promise<unknown>)[];
  /** A worker's jobs in hand, which the graceful stop lets finish. */
  drain?: Drain;
  /** Synchronous, at a second signal: what must not outlive the process (a local nats-server). */
  killNow?: () => void;
}

/**
 * Graceful shutdown: on SIGTERM/SIGINT run the stoppers in order, then exit. A worker lets its
 * jobs in hand finish first, which can take minutes on a large request: the log says so, and a
 * second signal stops at once. A job not finished was never acked, so the queue delivers it
 * again once its ack wait passes, to the next start or another worker.
 *
 * Stopping at once is dying of the signal, not process.exit(): exit() runs native teardown
 * while the inference thread is inside ONNX Runtime, which aborts the process. The signal is
 * raised again with this handler removed; store locks are still released (proper-lockfile's
 * signal-exit handles it), and killNow ends the children first.
 */
function untilSignal(logger: Logger, shutdown: Shutdown): Promise<number> {
  const { stoppers, drain, killNow } = shutdown;
  return new Promise((resolve) => {
    let stopping = false;
    let dying = false;
    const onSignal = async (signal: NodeJS.Signals) => {
      if (stopping) return stopNow(signal);
      stopping = true;
      const jobsInHand = drain?.jobsInHand() ?? 0;
      logger.info(
        { signal, jobsInHand },
        jobsInHand > 0 ? `shutting down once the ${jobsInHand} job(s) in hand finish; ${signal} again stops now` : 'shutting down',
      );
      for (const stop of stoppers) {
        try {
          await stop();
        } catch (error) {
          logger.error({ err: error }, 'error during shutdown');
        }
      }
      resolve(0);
    };
    /**
     * A second signal, or a closed terminal (SIGHUP): the jobs in hand are handed back, so they run
     * again in seconds (on another worker, or at the next start) rather than after their ack wait,
     * and the process dies of the signal. A signal during the hand-back does not wait for it.
     */
    const stopNow = async (signal: NodeJS.Signals) => {
      if (dying) return dieOf(signal);
      dying = true;
      const jobsInHand = drain?.jobsInHand() ?? 0;
      if (jobsInHand === 0) {
        logger.warn({ signal }, 'stopping now');
        return dieOf(signal);
      }
      const handedBack = await Promise.race([
        drain!.handBackAll().catch(() => undefined),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), HAND_BACK_WAIT_MS).unref()),
      ]);
      logger.warn(
        { signal, jobsInHand },
        handedBack === undefined
          ? `stopping now; the ${jobsInHand} unfinished job(s) could not be handed back and are delivered again ${drain!.ackWaitMs / 1000} s after their last heartbeat`
          : `stopping now; the ${handedBack} unfinished job(s) were handed back to the queue`,
      );
      return dieOf(signal);
    };
    // Dies of the signal with these handlers removed, the children ended first. The local
    // server, in its own session, gets no hangup of its own when the terminal closes.
    const dieOf = (signal: NodeJS.Signals) => {
      killNow?.();
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGHUP', stopNow);
      process.kill(process.pid, signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', stopNow);
  });
}
