import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_EVENT_STREAMS_PER_KEY } from './api/errors.ts';
import { DEFAULT_IMAGE_FETCH_LIMITS } from './image/fetch.ts';
import { EXECUTION_PROVIDER_VALUES } from './pipeline/providers.ts';
import type { TopologyOptions } from './queue/topology.ts';
import type { PostgresLimits } from './store/database.ts';
import { parseScheduleMs } from './webhooks/retry-policy.ts';
import { parseSecret } from './webhooks/sign.ts';
import { MAX_OUTPUT_SIDE } from './workflows/sizes.ts';

const boolean = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

/**
 * A number written as decimals (a sign and a fraction allowed; the bounds come after). Not
 * z.coerce alone: Number() reads ' ' as 0, '0x1F90' as 8080 and '1e3' as 1000, so a blank
 * PORT listened on a random port and a blank IMAGE_RETENTION_HOURS kept images for good.
 */
const decimal = (number: z.ZodNumber) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+(\.\d+)?$/, 'must be a number written in decimal digits')
    .transform(Number)
    .pipe(number);

/** CPU threads per ONNX Runtime session: far above any machine's cores; ONNX Runtime's pool grows without bound on a huge count. */
export const MAX_INFERENCE_THREADS = 256;
/** The highest CUDA device index taken (no machine has that many GPUs). */
export const MAX_CUDA_DEVICE_ID = 63;

/** The longest a Node timer waits; a longer setTimeout fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A duration in ms that a timer will wait out: at least `min`, at most MAX_TIMER_MS (about 24.8 days). */
const timerMs = (min: number) =>
  decimal(
    z
      .number()
      .int()
      .min(min, `must be at least ${min} ms`)
      .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days): a longer timer would fire at once`),
  );
const milliseconds = timerMs(1);

/** http(s) URLs only: what `output` links and the quick start build on. */
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

/** A port to listen on (0 = any free port), or 'off': no listener at all. */
const portOrOff = z.union([z.literal('off'), decimal(z.number().int().min(0).max(65535))], { error: 'must be a port number from 0 to 65535, or off' });

/** A proxy entry fastify's trustProxy (proxy-addr) understands: an address, a CIDR block, or a named range. */
function isProxyEntry(entry: string): boolean {
  if (entry === 'loopback' || entry === 'linklocal' || entry === 'uniquelocal') return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/**
 * Which proxies' X-Forwarded-For is believed for the client's address: 'false' (none: the
 * socket's peer is the client), a number of proxy hops in front of the API, or the proxies'
 * addresses. Never 'true': the leftmost entry is whatever the client wrote.
 */
const trustProxy = z.string().transform((value, context): false | number | string[] => {
  if (value === 'false' || value === '0') return false;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isProxyEntry(entry));
  if (bad === undefined) return entries;
  context.addIssue({ code: 'custom', message: `'${bad}' is not a hop count, an address, a CIDR block or loopback/linklocal/uniquelocal` });
  return z.NEVER;
});

/** One NATS server as nats.js takes it: host:port, or a nats, tls, ws or wss URL. */
function isNatsServer(entry: string): boolean {
  const server = entry.trim();
  if (server === '' || /\s/.test(server)) return false;
  try {
    const url = new URL(server.includes('://') ? server : `nats://${server}`);
    return ['nats:', 'tls:', 'ws:', 'wss:'].includes(url.protocol) && url.hostname !== '';
  } catch {
    return false;
  }
}

/** A value checked by a parser that throws with its own message (the webhooks' secret and schedule). */
const parsedBy = <T>(parse: (value: string) => T) =>
  z.string().transform((value, context): T => {
    try {
      return parse(value);
    } catch (error) {
      context.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

/** Where the stores, locks and the generated webhook secret live unless DATA_DIR says otherwise. */
export const DEFAULT_DATA_DIR = './data';

/** Every environment variable the service reads, validated once at start. */
export const ConfigSchema = z.object({
  PORT: decimal(z.number().int().min(0).max(65535)).default(8080),
  HOST: z.string().default('0.0.0.0'),
  /** Base of the URLs put in `output` (image files); defaults to http://localhost:PORT. */
  PUBLIC_BASE_URL: httpUrl
    .refine((value) => !/[?#]/.test(value), 'must not carry a query or fragment: image paths are appended to it')
    .optional(),
  DATA_DIR: z.string().default(DEFAULT_DATA_DIR),
  /** PostgreSQL server; when unset, the embedded PGlite database in DATA_DIR/pglite is used. */
  DATABASE_URL: z
    .string()
    // node-postgres's forms: a URL, a socket: URL, or a socket directory and database name.
    .regex(/^(postgres(ql)?:\/\/.|socket:.|\/.)/i, 'must be a postgres:// or postgresql:// URL (or a socket path; unset: the embedded PGlite database)')
    .optional(),
  /** PostgreSQL connections per process. */
  DB_POOL_SIZE: decimal(z.number().int().min(1).max(200)).default(10),
  /** Connecting to PostgreSQL, or waiting for a free pooled connection, before answering 503. */
  DB_CONNECT_TIMEOUT_MS: milliseconds.default(2000),
  /** One statement, on the client (a stalled server) and the server (statement_timeout), before answering 503. */
  DB_QUERY_TIMEOUT_MS: milliseconds.default(3000),
  /** At start, how long the API waits for an unreachable PostgreSQL server before giving up (exit 1). */
  DB_STARTUP_WAIT_MS: timerMs(0).default(60_000),
  /** At start, how long the API and a worker wait for an unreachable NATS server before giving up (exit 1). */
  NATS_STARTUP_WAIT_MS: timerMs(0).default(60_000),
  /** How long a create's Idempotency-Key is remembered (then it may be used afresh). */
  IDEMPOTENCY_KEY_TTL_HOURS: decimal(z.number().positive().max(24 * 30)).default(24),
  /** A prediction still queued or executing this long after it last changed is failed and refunded (predictions/expiry.ts). */
  PREDICTION_EXPIRY_HOURS: decimal(z.number().min(1).max(24 * 30)).default(24),
  /**
   * Output images are deleted this long after they were made (the image bucket's max age); 0
   * keeps them for good. Unset leaves the bucket as it is, so a process without it never
   * undoes another's setting; a new bucket keeps images for good.
   */
  IMAGE_RETENTION_HOURS: decimal(z.number().min(0).max(24 * 3650)).optional(),
  /** The nats-server binary `start` runs when NATS_URL is unset; unset: nats-server on PATH, else Debian's /usr/sbin/nats-server. */
  NATS_SERVER_BIN: z.string().optional(),
  /** NATS servers, comma separated; when unset, `start` runs a local nats-server. */
  NATS_URL: z
    .string()
    .refine((value) => value.split(',').every(isNatsServer), 'must list NATS servers, comma separated: host:port or nats://host:port')
    .optional(),
  /** Standard Webhooks secret (whsec_…); when unset one is generated and kept in DATA_DIR. */
  WEBHOOK_SECRET: parsedBy((value) => {
    parseSecret(value);
    return value;
  }).optional(),
  /** Delays between a webhook's attempts, e.g. 5s,30s,2m; unset = the documented schedule (webhooks/retry-policy.ts). */
  WEBHOOK_RETRY_SCHEDULE_MS: parsedBy(parseScheduleMs).optional(),
  WEBHOOK_TIMEOUT_MS: milliseconds.default(10_000),
  /** Development and tests only: allow http and loopback/private targets for webhooks and fetched images. */
  ALLOW_PRIVATE_URLS: boolean.default(false),
  /** userId:apiKey:credits,… seeded at start (idempotent). */
  API_KEYS: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** auto: readable lines for `start` on a terminal, JSON lines otherwise (logger.ts resolveLogFormat); pretty / json force one. */
  LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
  BODY_LIMIT_BYTES: decimal(z.number().int().min(1024).max(10 * 1024 * 1024)).default(64 * 1024),
  /** The whole request, headers and body, must arrive within this (else 408); also bounds reading the rest of a refused body. */
  REQUEST_TIMEOUT_MS: timerMs(1000).default(30_000),
  /** Proxies in front of the API whose X-Forwarded-For gives the client address (rate limits, logs): false, a hop count, or addresses/CIDRs. */
  TRUST_PROXY: trustProxy.default(false),
  /** Keyless previews and quotes a minute from one client address (routes/free-tools.ts). */
  PREVIEW_RATE_LIMIT: decimal(z.number().int().min(1)).default(120),
  /** Event streams one API key may hold open on one API replica (each is two subscriptions and a read every 5 s); one more is 429. */
  EVENT_STREAMS_PER_KEY: decimal(z.number().int().min(1).max(100_000)).default(DEFAULT_EVENT_STREAMS_PER_KEY),
  /** How long a valid API key is remembered (a revocation takes effect within it); 0 disables. */
  API_KEY_CACHE_TTL_MS: timerMs(0).default(5000),
  /** How stale a prediction read may be when another API replica changed it; 0 disables. */
  READ_CACHE_TTL_MS: timerMs(0).default(1000),
  /** Copies of each JetStream stream and of the image bucket: 3 on a clustered NATS, 1 on a single server. */
  JETSTREAM_REPLICAS: decimal(z.number().int().min(1).max(5)).default(1),
  /** A job's heartbeat window: a worker signs of life every third of it, so at least 1 s. */
  JOB_ACK_WAIT_MS: timerMs(1000).default(60_000),
  JOB_MAX_DELIVER: decimal(z.number().int().min(1).max(100)).default(3),
  /** Jobs a worker holds at once: on the device, waiting for it, and being finished on the CPU. */
  WORKER_CONCURRENCY: decimal(z.number().int().min(1).max(64)).default(4),
  /** Jobs held ready behind the one the device runs, so it never waits for the next pull. */
  WORKER_PREFETCH: decimal(z.number().int().min(0).max(8)).default(1),
  /** Threads that scan-check, repair and PNG-encode images; unset = every core but one. */
  FINISH_THREADS: decimal(z.number().int().min(1).max(64)).optional(),
  /** A job's deadline once the device starts it; unset = derived from its steps and size (worker/deadline.ts). */
  JOB_TIMEOUT_MS: milliseconds.optional(),
  /** How long an aborted or timed-out run may take to stop before its thread is terminated (and a thread to end after that, before the worker gives up). */
  JOB_ABORT_GRACE_MS: milliseconds.default(15_000),
  /** How long the inference thread, restarted after a crash, may take to load and warm up again before the worker gives the device up (exit 3). */
  WORKER_RESTART_TIMEOUT_MS: milliseconds.default(600_000),
  /** Sizes the worker runs its graphs at before pulling: 'native' (each model's native square), 'off', or WxH,WxH (output sizes). */
  WARMUP_SIZES: z
    .string()
    .regex(/^(native|off|\d+x\d+(,\d+x\d+)*)$/, 'native, off, or a list like 768x768,1024x576')
    .refine(
      (value) => !/\d/.test(value) || value.split(/[x,]/).every((side) => Number(side) >= 1 && Number(side) <= MAX_OUTPUT_SIDE),
      `each side from 1 to ${MAX_OUTPUT_SIDE} px (an output size)`,
    )
    .default('native'),
  /** The API's Prometheus endpoint (/metrics), apart from the API's port so an Ingress does not expose it; 0 = any free port, 'off' = none. */
  METRICS_PORT: portOrOff.default(9464),
  /** The worker's own HTTP port: /metrics, /healthz and /readyz (0 = any free port; unset or 'off' = none; `start` defaults it to 9465). */
  WORKER_METRICS_PORT: portOrOff.optional(),
  /** Test hook: make inference runs fail the way a device does (pipeline/fault-injection.ts). Never in production. */
  QR_ART_FAULT_INJECTION: z.string().optional(),
  WORKER_ID: z.string().optional(),
  /** Client images (qrImage, outpainting image): whole-fetch time limit, body size cap, decoded pixel cap. */
  IMAGE_FETCH_TIMEOUT_MS: milliseconds.default(DEFAULT_IMAGE_FETCH_LIMITS.totalTimeoutMs),
  IMAGE_MAX_BYTES: decimal(z.number().int().min(1024)).default(DEFAULT_IMAGE_FETCH_LIMITS.maxBytes),
  IMAGE_MAX_PIXELS: decimal(z.number().int().min(1)).default(DEFAULT_IMAGE_FETCH_LIMITS.maxPixels),
  /** Model manifest for the worker and `generate`; unset = this package's models/manifest.json (demo graphs). */
  MODELS_MANIFEST: z.string().optional(),
  /** ONNX Runtime execution provider; a device that cannot run every graph stops the worker, unless ',cpu' allows the fallback. */
  EXECUTION_PROVIDER: z.enum(EXECUTION_PROVIDER_VALUES).default('cpu'),
  CUDA_DEVICE_ID: decimal(z.number().int().min(0).max(MAX_CUDA_DEVICE_ID)).default(0),
  /** CPU threads per ONNX Runtime session; unset = all cores. */
  INFERENCE_THREADS: decimal(z.number().int().min(1).max(MAX_INFERENCE_THREADS)).optional(),
  /** diffusion: the model pipeline; control-image: return the control image itself (no models; fast, for tests and layout checks). */
  WORKER_PIPELINE: z.enum(['diffusion', 'control-image']).default('diffusion'),
}).superRefine((config, context) => {
  // The API's two listeners on one fixed port: found at start only after the worker loaded its
  // models and the database opened, as "already in use". (A worker alone listens on neither.)
  if (config.PORT !== 0 && config.METRICS_PORT === config.PORT) {
    context.addIssue({ code: 'custom', path: ['METRICS_PORT'], message: `is ${config.PORT}, the same port as PORT (the API's); set another, or off` });
  }
});

export type Config = z.infer<typeof ConfigSchema>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = ConfigSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  // Read again where the API seeds them; checked here so that a bad entry stops any command
  // before it starts a server or loads a model.
  parseApiKeysSpec(parsed.data.API_KEYS);
  return parsed.data;
}

export function publicBaseUrl(config: Config, listeningPort?: number): string {
  return (config.PUBLIC_BASE_URL ?? `http://localhost:${listeningPort ?? config.PORT}`).replace(/\/+$/, '');
}

/**
 * The shortest API key accepted from an operator (API_KEYS, `qr-art keys create --key`): a key is
 * the whole secret, and a short one is a guessable one. Minted keys are 47 characters.
 */
export const MIN_API_KEY_LENGTH = 24;

/**
 * Why an operator's chosen key is refused, or undefined. Visible ASCII only: a header cannot
 * carry a character beyond Latin-1 (fetch refuses it), and HTTP trims surrounding spaces, so such
 * a key was stored and granted credits but could never authenticate.
 */
export function apiKeyProblem(apiKey: string): string | undefined {
  if (apiKey.length < MIN_API_KEY_LENGTH) return `the key has ${apiKey.length} characters; use at least ${MIN_API_KEY_LENGTH} (qr-art keys create mints a random one)`;
  if (!/^[!-~]+$/.test(apiKey)) return 'the key may hold only visible ASCII characters (no spaces, no accents): an HTTP header could not carry it';
  return undefined;
}

/** Credits one grant may give (an API_KEYS entry, `qr-art keys`): far above any use, well inside the database's bigint cents. */
export const MAX_GRANT_CREDITS = 1e12;

/** Credits as an operator writes them (API_KEYS, `keys --credits`): decimal, whole cents, one grant's cap; why not, or undefined. */
export function creditsProblem(text: string): string | undefined {
  if (!/^\d+(\.\d{1,2})?$/.test(text)) return 'must be a non-negative number with at most two decimals';
  if (Number(text) > MAX_GRANT_CREDITS) return `must be at most ${MAX_GRANT_CREDITS} in one grant`;
  return undefined;
}

export function parseApiKeysSpec(spec: string | undefined): { userId: string; apiKey: string; credits: number }[] {
  if (!spec) return [];
  return spec
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [userId, apiKey, credits = '0', ...rest] = entry.split(':');
      if (!userId || !apiKey || rest.length > 0) {
        throw new ConfigError(`API_KEYS entry "${entry.replace(/:[^:]*:/, ':***:')}" is not userId:apiKey:credits`);
      }
      // As `keys --credits` takes them: 0x10, 1e3 or 1.005 would grant 16, 1000 or 1.00 unsaid.
      const badCredits = creditsProblem(credits.trim());
      if (badCredits) throw new ConfigError(`API_KEYS entry for user "${userId}": its credits '${credits}' ${badCredits}`);
      const keyProblem = apiKeyProblem(apiKey);
      if (keyProblem) throw new ConfigError(`API_KEYS entry for user "${userId}": ${keyProblem}`);
      return { userId, apiKey, credits: Number(credits) };
    });
}

/** WARMUP_SIZES as the inference client takes it. */
export function warmUpSizes(value: string): false | 'native' | { width: number; height: number }[] {
  if (value === 'off') return false;
  if (value === 'native') return 'native';
  return value.split(',').map((s) => {
    const [width, height] = s.split('x').map(Number);
    return { width: width!, height: height! };
  });
}

/** The PostgreSQL bounds the configuration asks for (store/database.ts). */
export function postgresLimits(config: Config): PostgresLimits {
  return { poolSize: config.DB_POOL_SIZE, connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS, queryTimeoutMs: config.DB_QUERY_TIMEOUT_MS };
}

/**
 * The streams and consumers the configuration asks for (queue/topology.ts): the API and the
 * workers both ensure them at start, from the same settings. An unset IMAGE_RETENTION_HOURS
 * leaves the image bucket's max age as it is.
 */
export function topologyOptions(config: Config): TopologyOptions {
  return {
    jobAckWaitMs: config.JOB_ACK_WAIT_MS,
    jobMaxDeliver: config.JOB_MAX_DELIVER,
    replicas: config.JETSTREAM_REPLICAS,
    ...(config.IMAGE_RETENTION_HOURS === undefined ? {} : { imageRetentionMs: Math.round(config.IMAGE_RETENTION_HOURS * 3600_000) }),
  };
}
