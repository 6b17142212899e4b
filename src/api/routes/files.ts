import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ObjectStore } from '@nats-io/obj';
import { asBrokerUnavailable, brokerUnavailable } from '../../queue/broker-errors.ts';
import { notFound } from '../errors.ts';

/** Object names are random 128-bit tokens plus an extension: the URL is the capability. */
export const FILE_NAME = /^[A-Za-z0-9_-]{16,64}\.(png|jpg|webp)$/;

const CONTENT_TYPES: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' };

/**
 * Output images, served from the NATS object store. No x-api-key: the links go into
 * `output` and webhooks, and are unguessable; files never change, so clients may cache them.
 */
export async function fileRoutes(app: FastifyInstance, options: { images: ObjectStore; brokerConnected: () => boolean }): Promise<void> {
  app.get<{ Params: { name: string } }>('/v1/files/:name', async (request, reply) => {
    const { name } = request.params;
    if (!FILE_NAME.test(name)) throw notFound('file');
    // While NATS is away a lookup would wait out its request timeout: answer 503 now.
    if (!options.brokerConnected()) throw brokerUnavailable();
    // The metadata first: a 304 or a HEAD needs no chunks, and each get() opens a consumer on
    // the server (kept for minutes) and pulls the whole object.
    const info = await options.images.info(name).catch(asBrokerUnavailable);
    if (!info || info.deleted) throw notFound('file');
    const etag = `"${info.digest}"`;
    // The entity's headers go on what is the entity (a 304, a HEAD, the image), never on an error
    // after them: a year-long, immutable 503 would keep the URL broken in every cache on the way.
    const entity = () =>
      reply
        .header('content-type', CONTENT_TYPES[name.split('.').pop()!] ?? 'application/octet-stream')
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('etag', etag)
        .header('x-content-type-options', 'nosniff');
    if (noneMatch(request.headers['if-none-match'], etag)) return entity().code(304).send();
    // An empty stream keeps the length set here (fastify would write 0 for an empty body).
    if (request.method === 'HEAD') return entity().header('content-length', info.size).send(Readable.from([]));
    const object = await options.images.get(name).catch(asBrokerUnavailable);
    if (!object) throw notFound('file');
    entity().header('content-length', info.size);
    const body = Readable.fromWeb(object.data as import('node:stream/web').ReadableStream<Uint8Array>);
    // NATS gone mid-transfer: the chunks stop and the response would stall with its length
    // unmet; ended with an error, the client sees a reset and can try again.
    const watch = setInterval(() => options.brokerConnected() || body.destroy(new Error('the connection to NATS was lost during the transfer')), CONNECTION_CHECK_MS);
    watch.unref();
    body.once('close', () => clearInterval(watch));
    return reply.send(body);
  });
}

/** How often a transfer under way checks that NATS is still connected. */
const CONNECTION_CHECK_MS = 500;

/**
 * Whether If-None-Match names this entity (RFC 9110 13.1.2): `*`, or any tag of its list by weak
 * comparison (a `W/` prefix, as proxies and CDNs rewrite tags, does not count).
 */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
