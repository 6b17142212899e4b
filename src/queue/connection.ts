import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { StorageType } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { waitWhileUnavailable, type DependencyUnavailableError } from '../util/unavailable.ts';
import { brokerUnavailable, isBrokerFailure } from './broker-errors.ts';
import { OBJECT_BUCKET } from './subjects.ts';

export interface Queue {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  images: ObjectStore;
  /** False from a disconnect until the reconnect: callers answer 503 at once instead of waiting out a request timeout. */
  connected(): boolean;
  close(): Promise<void>;
}

/** How long one connection attempt may wait for the server's greeting. */
export const NATS_CONNECT_TIMEOUT_MS = 5000;

/** Between the client's pings; a connection is given up after two go unanswered. */
export const NATS_PING_INTERVAL_MS = 10_000;

export async function connectQueue(servers: string, name: string, options: { pingIntervalMs?: number } = {}): Promise<Queue> {
  const nc = await connect({
    servers: servers.split(','),
    name,
    // A NATS restart must not take the API or a worker down: keep reconnecting.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // A server that takes the connection and never answers (packets dropped on the way back) fails
    // the attempt here, not after the driver's 20 s: NATS_STARTUP_WAIT_MS stays the bound it says.
    timeout: NATS_CONNECT_TIMEOUT_MS,
    // A connection that goes silent without a FIN or RST (the server's node lost, a partition)
    // is found by missed pings: the driver's default (2 min, 2 missed) kept a worker "connected"
    // for ~4 minutes, its heartbeats lost and its jobs redelivered to others after AckWait
    // (60 s in deploy/). Two missed 10 s pings find it well inside that.
    pingInterval: options.pingIntervalMs ?? NATS_PING_INTERVAL_MS,
    maxPingOut: 2,
  });
  let connected = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnecting' || status.type === 'close') connected = false;
      else if (status.type === 'reconnect') connected = true;
    }
  })();
  const js = jetstream(nc);
  let jsm: JetStreamManager;
  let images: ObjectStore;
  try {
    jsm = await jetstreamManager(nc);
    images = await openImageBucket(js);
  } catch (error) {
    // Connected but JetStream not answering (not enabled, no meta leader yet): this connection
    // reconnects forever, so a caller that retries would pile them up and never exit.
    await nc.close().catch(() => undefined);
    throw error;
  }
  return {
    nc,
    js,
    jsm,
    images,
    connected: () => connected && !nc.isClosed(),
    async close() {
      if (nc.isClosed()) return;
      await nc.drain().catch(() => nc.close());
    },
  };
}

/** The bucket the workers put images in, created when it is not there. */
export const openImageBucket = (js: JetStreamClient): Promise<ObjectStore> => new Objm(js).create(OBJECT_BUCKET, { storage: StorageType.File });

/**
 * connectQueue, waiting up to waitMs for a NATS server that cannot be reached yet (still starting,
 * restarting): a process started before it comes up with it instead of exiting with a stack trace.
 * The failure that ends the wait names the servers; any other failure (bad credentials, a bad URL)
 * is thrown at once.
 */
export function connectQueueWaiting(servers: string, name: string, waitMs: number, onWaiting: (error: DependencyUnavailableError) => void): Promise<Queue> {
  return waitWhileUnavailable(
    async () => {
      try {
        return await connectQueue(servers, name);
      } catch (error) {
        if (!isBrokerFailure(error) && !isUnresolvedHost(error)) throw error;
        // The driver's own cause says why ("connect ECONNREFUSED 127.0.0.1:4222").
        const reason = error instanceof Error && error.cause instanceof Error ? error.cause.message : (error as Error).message;
        throw brokerUnavailable(new Error(`cannot reach NATS at ${servers}: ${reason}`));
      }
    },
    waitMs,
    onWaiting,
  );
}

/**
 * The server's name does not resolve (yet): a compose service or a Kubernetes Service still
 * starting is not in DNS until it is up, so at start this is waited out like a refused connection.
 */
function isUnresolvedHost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return true;
  return error.cause !== undefined && error.cause !== error && isUnresolvedHost(error.cause);
}
