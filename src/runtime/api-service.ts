import path from 'node:path';
import type { Logger } from 'pino';
import { ApiMetrics } from '../api/metrics.ts';
import { registerScrapeProbes } from '../api/metrics-probes.ts';
import { startMetricsServer, type MetricsServer } from '../api/metrics-server.ts';
import { buildApi, type ApiApp } from '../api/server.ts';
import type { ReadinessCheck } from '../probes/health-routes.ts';
import { parseApiKeysSpec, postgresLimits, publicBaseUrl, topologyOptions, type Config } from '../config.ts';
import { startEventApplier } from '../predictions/apply-events.ts';
import { createSubmitter } from '../predictions/create.ts';
import { createPredictionReader } from '../predictions/reader.ts';
import { startMaxDeliveryHandler } from '../predictions/max-deliveries.ts';
import { startExpirySweep } from '../predictions/expiry.ts';
import { connectQueueWaiting, type Queue } from '../queue/connection.ts';
import { startOutboxRelay } from '../queue/outbox-relay.ts';
import { createPredictionFeed } from '../queue/prediction-feed.ts';
import { ensureTopology } from '../queue/topology.ts';
import { keepTopologyAfterReconnects } from '../queue/topology-keeper.ts';
import { seedFromSpec } from '../store/accounts.ts';
import type { Database } from '../store/database.ts';
import { openDatabaseWaiting } from '../store/open-database.ts';
import { startKeyPruner } from '../store/idempotency.ts';
import { startWebhookDispatcher } from '../webhooks/dispatcher.ts';
import { DEFAULT_WEBHOOK_SCHEDULE_MS } from '../webhooks/retry-policy.ts';
import { resolveWebhookSecret } from './webhook-secret.ts';

export interface ApiService {
  app: ApiApp;
  db: Database;
  queue: Queue;
  /** The address it listens on, e.g. http://127.0.0.1:8080 */
  address: string;
  metrics: ApiMetrics;
  /** Where GET /metrics is served (METRICS_PORT), unless METRICS_PORT=off. */
  metricsAddress?: string;
  stop(): Promise<void>;
}

export interface ApiServiceOptions {
  config: Config;
  natsUrl: string;
  logger: Logger;
  /** Extra readiness checks (e.g. the in-process worker under `start`). */
  extraReadiness?: Record<string, ReadinessCheck>;
}

/** The control plane: database, NATS topology, background consumers and the HTTP server. */
export async function startApiService(options: ApiServiceOptions): Promise<ApiService> {
  const { config, logger } = options;
  const db = await openDatabaseWaiting(
    { databaseUrl: config.DATABASE_URL, pgliteDir: path.join(config.DATA_DIR, 'pglite'), limits: postgresLimits(config) },
    config.DB_STARTUP_WAIT_MS,
    (error) => logger.warn({ err: error.cause ?? error }, 'database not reachable yet; waiting for it'),
  );
  logger.info({ database: db.kind }, 'database ready');
  let queue: Queue | undefined;
  let webhookSecret: Awaited<ReturnType<typeof resolveWebhookSecret>>;
  try {
    for (const conflict of await seedFromSpec(db, parseApiKeysSpec(config.API_KEYS))) {
      logger.warn(
        conflict,
        conflict.reason === 'key_revoked'
          ? 'API_KEYS lists a key that was revoked: it stays revoked (create a new one)'
          : `API_KEYS lists a key for ${conflict.userId} that belongs to ${conflict.owner}: it stays ${conflict.owner}'s`,
      );
    }
    queue = await connectQueueWaiting(options.natsUrl, 'qr-art-api', config.NATS_STARTUP_WAIT_MS, (error) =>
      logger.warn({ err: error.cause ?? error }, 'NATS not reachable yet; waiting for it'),
    );
    await ensureTopology(queue.jsm, topologyOptions(config));
    keepTopologyAfterReconnects(queue, topologyOptions(config), logger);
    webhookSecret = await resolveWebhookSecret(config.WEBHOOK_SECRET, config.DATA_DIR);
  } catch (error) {
    // Nothing serves yet: close what is open here, which would keep the process from exiting.
    await queue?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw error;
  }
  // One per service: every piece below that records gets this one (tests run several services in a process).
  const metrics = new ApiMetrics();
  registerScrapeProbes({ registry: metrics.registry, db, queue, logger });

  if (webhookSecret.source !== 'env' && config.DATABASE_URL) {
    // A shared database means replicas may share the work, each with its own DATA_DIR: each
    // would sign with its own secret, and a receiver would refuse the others' deliveries.
    logger.warn(
      { file: webhookSecret.file },
      'WEBHOOK_SECRET is unset: this API signs webhooks with a secret kept in its own DATA_DIR; API replicas sharing DATABASE_URL each make their own, and receivers refuse the deliveries of all but one. Set the same WEBHOOK_SECRET on every replica',
    );
  } else if (webhookSecret.source !== 'env') logger.info({ file: webhookSecret.file }, 'webhook signing secret kept in DATA_DIR (set WEBHOOK_SECRET to choose one)');

  // Known for sure only once listening (PORT=0 picks a free port).
  let baseUrl = publicBaseUrl(config);
  const reader = createPredictionReader(db, config.READ_CACHE_TTL_MS);
  const idempotencyTtlMs = config.IDEMPOTENCY_KEY_TTL_HOURS * 3600_000;
  const keyPruner = startKeyPruner(db, idempotencyTtlMs, logger);
  const relay = startOutboxRelay({ db, js: queue.js, logger: logger.child({ component: 'outbox' }) });
  const expiry = startExpirySweep({ db, relay, logger, onChange: reader.remember, metrics, afterMs: config.PREDICTION_EXPIRY_HOURS * 3600_000 });
  const background = [
    startEventApplier({ db, queue, relay, logger, publicBaseUrl: () => baseUrl, onChange: reader.remember, metrics }),
    startMaxDeliveryHandler({ db, queue, relay, logger, onChange: reader.remember, metrics }),
    startWebhookDispatcher({
      queue,
      logger,
      secret: webhookSecret.secret,
      scheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS ?? DEFAULT_WEBHOOK_SCHEDULE_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      allowPrivateUrls: config.ALLOW_PRIVATE_URLS,
      metrics,
    }),
  ];

  const app = buildApi({
    db,
    submitter: createSubmitter({ db, relay, idempotencyTtlMs, metrics }),
    reader,
    apiKeyCacheTtlMs: config.API_KEY_CACHE_TTL_MS,
    images: queue.images,
    brokerConnected: queue.connected,
    feed: createPredictionFeed(queue.nc),
    previewRateLimit: config.PREVIEW_RATE_LIMIT,
    eventStreamsPerKey: config.EVENT_STREAMS_PER_KEY,
    trustProxy: config.TRUST_PROXY,
    logger,
    allowPrivateUrls: config.ALLOW_PRIVATE_URLS,
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    metrics,
    readiness: { ...options.extraReadiness },
    dependencies: {
      database: async () => (await db.query('SELECT 1')).rows.length === 1,
      nats: async () => {
        if (!queue.connected()) return false;
        await queue.nc.flush();
        return true;
      },
    },
  });
  let metricsServer: MetricsServer | undefined;
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await metricsServer?.close();
      // Requests in flight finish, up to REQUEST_TIMEOUT_MS (api/graceful-close.ts).
      await app.close();
      keyPruner.stop();
      expiry.stop();
      await Promise.all(background.map((consumer) => consumer.stop()));
      await relay.stop();
      await queue.close();
      await db.close();
    })();
    return stopping;
  };
  let address: string;
  try {
    address = await app.listen({ port: config.PORT, host: config.HOST });
    // Never run without the metrics asked for.
    if (config.METRICS_PORT !== 'off') metricsServer = await startMetricsServer({ port: config.METRICS_PORT, host: config.HOST, registry: metrics.registry, logger });
  } catch (error) {
    // A port cannot be had (taken, most likely): close the database, NATS and consumers opened above.
    await stop();
    throw error;
  }
  baseUrl = publicBaseUrl(config, app.server.address() && typeof app.server.address() === 'object' ? (app.server.address() as { port: number }).port : config.PORT);
  void relay.sweep();
  return {
    app,
    db,
    queue,
    address,
    metrics,
    ...(metricsServer ? { metricsAddress: metricsServer.address } : {}),
    stop,
  };
}
