import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { StorageType } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { OBJECT_BUCKET } from './subjects.ts';

export interface Queue {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  images: ObjectStore;
  close(): Promise<void>;
}

export async function connectQueue(servers: string, name: string): Promise<Queue> {
  const nc = await connect({
    servers: servers.split(','),
    name,
    // A NATS restart must not take the API or a worker down: keep reconnecting.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const images = await new Objm(js).create(OBJECT_BUCKET, { storage: StorageType.File });
  return {
    nc,
    js,
    jsm,
    images,
    async close() {
      if (nc.isClosed()) return;
      await nc.drain().catch(() => nc.close());
    },
  };
}
