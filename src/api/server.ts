import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ObjectStore } from '@nats-io/obj';
import type { Database } from '../store/database.ts';
import type { PredictionSubmitter } from '../predictions/create.ts';
import type { PredictionReader } from '../predictions/reader.ts';
import type { PredictionFeed } from '../queue/prediction-feed.ts';
import { AllowedMethods } from './allowed-methods.ts';
import { ApiError, toApiError } from './errors.ts';
import { jsonBodyText } from './json-body.ts';
import { UNMATCHED_ROUTE, type ApiMetrics } from './metrics.ts';
import { closeGracefully } from './graceful-close.ts';
import { docsRoutes } from './routes/docs.ts';
import { fileRoutes } from './routes/files.ts';
import { freeToolRoutes } from './routes/free-tools.ts';
import { healthRoutes, PROBE_PATHS, type ReadinessCheck } from '../probes/health-routes.ts';
import { playgroundRoutes } from './routes/playground.ts';
import { predictionRoutes } from './routes/predictions.ts';

export interface ApiDependencies {
  db: Database;
  submitter: PredictionSubmitter;
  reader: PredictionReader;
  apiKeyCacheTtlMs: number;
  images: ObjectStore;
  /** Status events and progress as workers publish them (the event streams). */
  feed: PredictionFeed;
  /** Keyless previews and quotes a minute from one address. */
  previewRateLimit: number;
  /** Event streams one key may hold open on this replica. */
  eventStreamsPerKey: number;
  /** Proxies whose X-Forwarded-For gives the client's address (TRUST_PROXY): none, a hop count, or their addresses. */
  trustProxy: false | number | string[];
  /** Whether NATS is connected now (queue/connection.ts). */
  brokerConnected: () => boolean;
  logger: Logger;
  /** What this replica needs of its own to take requests (/readyz 503 when one fails). */
  readiness: Record<string, ReadinessCheck>;
  /** The database and NATS: reported by /readyz, never a 503 (probes/health-routes.ts says why). */
  dependencies: Record<string, ReadinessCheck>;
  allowPrivateUrls: boolean;
  bodyLimit: number;
  /**
   * The whole request, headers and body, must arrive within this; else 408 and the connection
   * is closed. It is also what requests in flight get to finish when the API stops.
   */
  requestTimeoutMs: number;
  /** Where answered requests are counted (absent: not counted). */
  metrics?: ApiMetrics;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** An honest client sends its headers in a packet or two; this bounds one that dribbles them (slowloris). */
const HEADERS_TIMEOUT_MS = 10_000;

/**
 * How much of a body we already answered (413 for its size, 401 before reading it) we read
 * and discard so that the client, still sending, can read the answer; past this the
 * connection is closed instead. REQUEST_TIMEOUT_MS bounds the time it may take.
 */
export const DRAIN_LIMIT_BYTES = 32 * 1024 * 1024;

/** Sockets whose current request was answered before its body had all arrived. */
const answeredEarly = new WeakSet<Socket>();

/** The HTTP surface: where every request goes is listed here. */
export function buildApi(deps: ApiDependencies) {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.bodyLimit,
    // request.ip, which the preview rate limit counts by, is the client's, not an Ingress controller's.
    // (A hop count as proxy-addr's function: fastify takes a number too, but its types do not.)
    trustProxy: typeof deps.trustProxy === 'number' ? trustHops(deps.trustProxy) : deps.trustProxy,
    // fastify's default (0) lets a body that trickles in hold a request, and app.close(), forever.
    requestTimeout: deps.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, deps.requestTimeoutMs),
      // Node looks for expired requests every 30 s by default, which would let a 30 s timeout run to 60 s.
      connectionsCheckingInterval: Math.min(1000, deps.requestTimeoutMs),
    },
    // connectionTimeout (socket inactivity) stays 0: a create waiting on the database is an
    // idle socket too, and closing it would drop the answer; requestTimeout covers slow
    // clients and keepAliveTimeout (fastify's 72 s, past common load balancers' 60 s) idle ones.
    clientErrorHandler: (error, socket) => answerClientError(error, socket, deps.requestTimeoutMs, deps.logger),
    // Honour a caller's x-request-id when it is sane, so logs join across services.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // closeGracefully answers requests that arrive during the stop, in our error body.
    return503OnClosing: false,
    // A body key `__proto__` (or `constructor.prototype`) is valid JSON and, like any unknown
    // field, ignored: dropped while parsing, so it can reach no object's prototype. ('error', the
    // default, answered such a body as "not valid JSON", though it is.)
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    // Router-level rejections (bad percent-encoding, an over-long path parameter) get our error body too.
    // No hook runs for them, so the request id is set here.
    frameworkErrors: (error, request, reply) => {
      const apiError = toApiError(error);
      void (reply as unknown as FastifyReply).code(apiError.statusCode).header('x-request-id', request.id).send(apiError.toBody());
    },
  });
  // Create bodies are JSON only (spec 4): without fastify's built-in text/plain parser a
  // text/plain body is a 415, as on GET /v1/predictions/queue, not a string that fails validation.
  app.removeContentTypeParser('text/plain');
  // fastify's own JSON parser (with the poisoning rules above), given text decoded strictly.
  const parseJsonText = app.getDefaultJsonParser('remove', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = jsonBodyText(body as Buffer);
    } catch (error) {
      done(error as ApiError, undefined);
      return;
    }
    parseJsonText(request, text, done);
  });

  closeGracefully(app, deps.requestTimeoutMs);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (!request.raw.complete) readRestOfBody(request, reply);
  });
  const { metrics } = deps;
  if (metrics) {
    // By route pattern, never the raw URL (ids would make a series each); unknown paths share one value.
    const routeOf = (request: FastifyRequest): string => request.routeOptions.url ?? UNMATCHED_ROUTE;
    const counted = new WeakSet<FastifyRequest>();
    app.addHook('onRequest', async (request, reply) => {
      if (PROBE_PATHS.has(routeOf(request))) return;
      // A client that leaves before its answer is written gets no onResponse: count it here.
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished || counted.has(request)) return;
        counted.add(request);
        metrics.httpAbandoned(request.method, routeOf(request));
      });
    });
    app.addHook('onResponse', async (request, reply) => {
      if (PROBE_PATHS.has(routeOf(request)) || counted.has(request)) return;
      counted.add(request);
      // An event stream's time is how long it was followed, not how long an answer took.
      const streamed = String(reply.getHeader('content-type') ?? '').startsWith('text/event-stream');
      metrics.httpAnswered(request.method, routeOf(request), reply.statusCode, streamed ? null : reply.elapsedTime / 1000);
    });
  }

  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error as FastifyError, request.headers);
    if (apiError.statusCode === 503) request.log.warn({ err: error }, 'dependency unavailable');
    else if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    if (apiError.retryAfterSeconds !== undefined) reply.header('retry-after', String(apiError.retryAfterSeconds));
    reply.headers(apiError.headers);
    return reply.code(apiError.statusCode).send(apiError.toBody());
  });
  // Every route registered below, so that a known path asked with another method gets 405.
  const allowedMethods = new AllowedMethods();
  app.addHook('onRoute', (route) => allowedMethods.add(route.method, route.url, route.config?.refusesMethod === true));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = allowedMethods.at(request.url);
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      const error = new ApiError(405, 'method_not_allowed', `${path} accepts ${allowed.join(', ')}, not ${request.method}`, [
        { field: 'method', rule: 'allowed_methods', message: `use ${allowed.join(', ')}` },
      ]);
      return reply.code(405).header('allow', allowed.join(', ')).send(error.toBody());
    }
    const error = new ApiError(404, 'not_found', `no route ${request.method} ${path}`);
    return reply.code(404).send(error.toBody());
  });

  app.register(healthRoutes, { checks: deps.readiness, dependencies: deps.dependencies });
  app.register(docsRoutes);
  app.register(playgroundRoutes);
  app.register(fileRoutes, { images: deps.images, brokerConnected: deps.brokerConnected });
  app.register(freeToolRoutes, { allowPrivateUrls: deps.allowPrivateUrls, perMinute: deps.previewRateLimit });
  app.register(predictionRoutes, {
    feed: deps.feed,
    db: deps.db,
    submitter: deps.submitter,
    reader: deps.reader,
    apiKeyCacheTtlMs: deps.apiKeyCacheTtlMs,
    eventStreamsPerKey: deps.eventStreamsPerKey,
    allowPrivateUrls: deps.allowPrivateUrls,
    bodyLimit: deps.bodyLimit,
  });
  return app;
}

export type ApiApp = ReturnType<typeof buildApi>;

/** Trusts the `hops` proxies nearest the API: the client is the address the farthest of them saw. */
const trustHops =
  (hops: number) =>
  (_address: string, hop: number): boolean =>
    hop < hops;

/**
 * A reply is going out before the request's body has all arrived (413, a 401 from the key
 * check). fastify asks to close after a refused body (`connection: close`), and Node then
 * closes the socket as soon as the reply is written: what the client still sends is answered
 * with a reset, its writes fail (EPIPE/ECONNRESET) and it often never reads the 413. So the rest of
 * the body is read and discarded instead, up to DRAIN_LIMIT_BYTES and within the request
 * timeout, and the connection is kept for the next request.
 */
function readRestOfBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  const socket = raw.socket;
  if (Number(request.headers['content-length']) > DRAIN_LIMIT_BYTES) {
    // Announced as more than we would read for nothing: answer and close.
    reply.header('connection', 'close');
    return;
  }
  reply.removeHeader('connection');
  answeredEarly.add(socket);
  let drained = 0;
  // Listening before the reply ends also keeps Node from dumping the body itself
  // (unbounded, and its dump removes every 'data' listener).
  raw.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) socket.destroy();
  });
  raw.once('end', () => answeredEarly.delete(socket));
}

/**
 * Errors below the router (a timed-out request, malformed HTTP, headers too large): the
 * answer is written straight to the socket, in our error body, and the socket closed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket, requestTimeoutMs: number, logger: Logger): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  logger.debug({ err: error }, 'client error');
  // Its request was answered already (readRestOfBody): a second answer would be read as the
  // reply to the client's next request.
  if (answeredEarly.has(socket) || !socket.writable) {
    socket.destroy();
    return;
  }
  const answer =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError(408, 'request_timeout', `the request did not arrive within ${requestTimeoutMs} ms`)
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError(431, 'invalid_request', 'the request headers are too large', [{ field: 'headers', rule: 'max_header_size' }])
        : new ApiError(400, 'invalid_request', 'the request is not valid HTTP', [{ field: '', rule: 'http' }]);
  const body = JSON.stringify(answer.toBody());
  socket.write(
    `HTTP/1.1 ${answer.statusCode} ${STATUS_CODES[answer.statusCode]}\r\nconnection: close\r\nx-request-id: ${randomUUID()}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.destroy();
}
