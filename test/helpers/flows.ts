import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { StatusEventInput } from '../../src/messages/schemas.ts';
import { CONSUMERS, STREAMS, subjects } from '../../src/queue/subjects.ts';

/**
 * Helpers for flow tests that play the worker (publishing status events) or the webhook
 * receiver. They talk to the service only through NATS and HTTP, as the real parts do.
 */

/** An object-store name of the shape workers use (128 random bits, base64url). */
export function imageName(extension = 'png'): string {
  return `${randomBytes(16).toString('base64url')}.${extension}`;
}

/** Publishes a status event as a worker would; msgId defaults to a fresh one (no dedup). */
export async function publishEvent(js: JetStreamClient, event: StatusEventInput, msgId: string = randomBytes(8).toString('hex')): Promise<void> {
  await js.publish(subjects.event(event.predictionId), JSON.stringify(event), { msgID: msgId });
}

/** Publishes arbitrary bytes on a prediction's event subject (malformed events). */
export async function publishRawEvent(js: JetStreamClient, predictionId: string, data: string): Promise<void> {
  await js.publish(subjects.event(predictionId), data);
}

/** True once the API's event applier has acked (or terminated) every event in the stream. */
export async function eventsDrained(jsm: JetStreamManager): Promise<boolean> {
  const [stream, consumer] = await Promise.all([jsm.streams.info(STREAMS.events), jsm.consumers.info(STREAMS.events, CONSUMERS.eventApplier)]);
  return consumer.num_pending === 0 && consumer.num_ack_pending === 0 && consumer.ack_floor.stream_seq >= stream.state.last_seq;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Date.now() when the request was complete. */
  at: number;
}

/** Decides the answer to one request; `attempt` counts requests to this path, from 1. */
export type WebhookHandler = (request: ReceivedWebhook, response: http.ServerResponse, attempt: number) => void;

export interface WebhookReceiver {
  /** Base URL, e.g. http://127.0.0.1:PORT */
  url: string;
  received: ReceivedWebhook[];
  /** Requests to one path, in arrival order. */
  at(path: string): ReceivedWebhook[];
  /** Sets how a path answers; paths without a handler answer 200. */
  handle(path: string, handler: WebhookHandler): void;
  close(): Promise<void>;
}

/** Answers the listed statuses in turn, repeating the last one. */
export function answers(...statuses: number[]): WebhookHandler {
  return (_request, response, attempt) => {
    response.writeHead(statuses[Math.min(attempt, statuses.length) - 1]!).end();
  };
}

/** A local HTTP server recording every webhook POST (tests run with ALLOW_PRIVATE_URLS=true). */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const handlers = new Map<string, WebhookHandler>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      const request: ReceivedWebhook = { path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(request);
      const attempt = received.filter((r) => r.path === path).length;
      (handlers.get(path) ?? answers(200))(request, res, attempt);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    at: (path) => received.filter((r) => r.path === path),
    handle: (path, handler) => void handlers.set(path, handler),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
