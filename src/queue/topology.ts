import { nanos } from '@nats-io/nats-core';
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { CONSUMERS, OBJECT_BUCKET, STREAMS, subjects } from './subjects.ts';

export interface TopologyOptions {
  /** How long a worker may hold a job without heartbeat before it is redelivered. */
  jobAckWaitMs: number;
  /** Deliveries of one job before it is given up (and the prediction failed and refunded). */
  jobMaxDeliver: number;
  /**
   * Copies of every stream (and of the image bucket) a NATS cluster keeps: 3 on a 3-server
   * JetStream cluster survives losing a server; 1 (the default) on a single server.
   */
  replicas?: number;
  /** How long an output image is kept (the image bucket's max age); 0 = for good, undefined = as it is. */
  imageRetentionMs?: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** JetStream's default duplicates window. */
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/**
 * Creates or updates every stream and durable consumer. The API and the workers both call
 * it at start, so whichever starts first leaves the same topology.
 */
export async function ensureTopology(jsm: JetStreamManager, options: TopologyOptions): Promise<void> {
  const replicas = options.replicas ?? 1;
  await ensureStream(jsm, {
    num_replicas: replicas,
    name: STREAMS.jobs,
    subjects: [subjects.jobsAll],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    // The outbox may republish after a crash; within this window the server drops the copy.
    duplicate_window: nanos(30 * 60 * 1000),
  });
  await ensureStream(jsm, {
    num_replicas: replicas,
    name: STREAMS.events,
    subjects: [subjects.eventsAll],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(7 * DAY_MS),
    duplicate_window: nanos(30 * 60 * 1000),
  });
  await ensureStream(jsm, {
    num_replicas: replicas,
    name: STREAMS.webhooks,
    subjects: [subjects.webhooksAll],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(30 * 60 * 1000),
  });
  // Advisories are plain NATS messages; capturing them in a stream means a MaxDeliver
  // that happens while the API is down is still handled when it comes back.
  await ensureStream(jsm, {
    num_replicas: replicas,
    name: STREAMS.jobAdvisories,
    subjects: [subjects.jobMaxDeliveries],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
  });

  // The image bucket is created by connectQueue; its backing stream gets the same replicas,
  // and its max age is the images' retention (the object store's own TTL).
  const bucketStream = `OBJ_${OBJECT_BUCKET}`;
  const bucket = await jsm.streams.info(bucketStream).catch(() => null);
  if (bucket) {
    const maxAge = options.imageRetentionMs === undefined ? bucket.config.max_age : nanos(options.imageRetentionMs);
    if (bucket.config.num_replicas !== replicas || bucket.config.max_age !== maxAge) {
      // The server refuses a duplicates window (default 2 minutes) longer than the max age.
      const duplicateWindow = maxAge > 0 ? Math.min(nanos(DUPLICATE_WINDOW_MS), maxAge) : nanos(DUPLICATE_WINDOW_MS);
      await jsm.streams.update(bucketStream, { num_replicas: replicas, max_age: maxAge, duplicate_window: duplicateWindow });
    }
  }

  await ensureConsumer(jsm, STREAMS.jobs, {
    durable_name: CONSUMERS.workers,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(options.jobAckWaitMs),
    max_deliver: options.jobMaxDeliver,
    max_ack_pending: -1,
  });
  await ensureConsumer(jsm, STREAMS.events, {
    durable_name: CONSUMERS.eventApplier,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(30_000),
    max_deliver: -1,
  });
  await ensureConsumer(jsm, STREAMS.webhooks, {
    durable_name: CONSUMERS.webhookDispatcher,
    ack_policy: AckPolicy.Explicit,
    // Longer than one delivery attempt's timeout; retries and deferrals wait with nak(delay).
    ack_wait: nanos(60_000),
    max_deliver: -1,
    // Unlimited: deliveries waiting for a retry or for a busy destination are nak'ed with a
    // delay and stay pending meanwhile; with a cap, enough of them for receivers that hang
    // would stop the pull for every destination. The dispatcher's pull size bounds what it
    // holds at once.
    max_ack_pending: -1,
  });
  await ensureConsumer(jsm, STREAMS.jobAdvisories, {
    durable_name: CONSUMERS.maxDeliveries,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(30_000),
    max_deliver: -1,
  });
}

async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  const existing = await jsm.streams.info(config.name).catch(() => null);
  if (!existing) {
    await jsm.streams.add(config);
    return;
  }
  const { retention: _retention, storage: _storage, ...changeable } = config;
  await jsm.streams.update(config.name, changeable);
}

async function ensureConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<void> {
  const existing = await jsm.consumers.info(stream, config.durable_name).catch(() => null);
  if (!existing) {
    await jsm.consumers.add(stream, config);
    return;
  }
  const { durable_name, deliver_policy: _deliverPolicy, ack_policy: _ackPolicy, ...changeable } = config;
  await jsm.consumers.update(stream, durable_name, changeable);
}
