import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../store/database.ts';
import { IdempotencyKeyReusedError, requestDigest } from '../../store/idempotency.ts';
import { InsufficientCreditsError, listPredictions } from '../../store/predictions.ts';
import type { PredictionReader } from '../../predictions/reader.ts';
import type { PredictionSubmitter } from '../../predictions/create.ts';
import { parseCreateBody } from '../../workflows/validate.ts';
import { ApiKeyCheck, principalOf } from '../auth.ts';
import { ApiError, invalidRequest, notFound } from '../errors.ts';
import { jsonBodyText } from '../json-body.ts';
import { pageMeta, parseListQuery } from '../pagination.ts';
import type { PredictionFeed } from '../../queue/prediction-feed.ts';
import { predictionEventRoutes } from './prediction-events.ts';
import { ByteCollector } from '../../util/byte-collector.ts';

export interface PredictionRoutesOptions {
  db: Database;
  submitter: PredictionSubmitter;
  reader: PredictionReader;
  apiKeyCacheTtlMs: number;
  /** Event streams one key may hold open on this replica. */
  eventStreamsPerKey: number;
  allowPrivateUrls: boolean;
  bodyLimit: number;
  /** Live status and progress for the event streams. */
  feed: PredictionFeed;
}

/** The prediction API of spec 4: create (POST, and GET for outpainting), get, list; and each prediction's event stream. */
export async function predictionRoutes(app: FastifyInstance, options: PredictionRoutesOptions): Promise<void> {
  const { db, submitter } = options;
  app.decorateRequest('principal', null);
  const keys = new ApiKeyCheck(db, options.apiKeyCacheTtlMs);
  app.addHook('onRequest', keys.hook);
  await app.register(predictionEventRoutes, { db, feed: options.feed, keys, maxPerKey: options.eventStreamsPerKey });

  async function create(request: FastifyRequest, reply: FastifyReply, body: unknown) {
    const principal = principalOf(request);
    const idempotencyKey = idempotencyKeyOf(request);
    const parsed = parseCreateBody(body, { allowPrivateUrls: options.allowPrivateUrls });
    if (!parsed.ok) throw invalidRequest(parsed.issues);
    try {
      const claim = idempotencyKey === undefined ? undefined : { key: idempotencyKey, requestHash: requestDigest(body) };
      const { record, replayed } = await submitter.submit(principal.userId, parsed.value, claim);
      options.reader.remember(record);
      if (replayed) {
        reply.header('idempotent-replayed', 'true');
        request.log.info({ predictionId: record.id, idempotencyKey }, 'create replayed from its idempotency key');
      } else {
        request.log.info({ predictionId: record.id, workflow: parsed.value.workflow, credits: record.credits }, 'prediction created');
      }
      return { success: true, data: record };
    } catch (error) {
      if (error instanceof InsufficientCreditsError) {
        throw new ApiError(402, 'insufficient_credits', error.message, [{ field: 'credits', rule: 'balance', message: error.message }]);
      }
      if (error instanceof IdempotencyKeyReusedError) {
        throw new ApiError(422, 'idempotency_key_reused', error.message, [{ field: 'idempotency-key', rule: 'same_request' }]);
      }
      throw error;
    }
  }

  app.post('/v1/predictions/queue', async (request, reply) => create(request, reply, request.body));

  // Spec 4.3 names GET for outpainting and shows a JSON body; fastify does not parse
  // bodies on GET, so the body is read here with the same size limit. No HEAD twin: fastify
  // would answer HEAD with this handler, creating and charging a prediction whose id the
  // bodiless answer never tells.
  app.get('/v1/predictions/queue', { exposeHeadRoute: false }, async (request, reply) => {
    const body = await readJsonBody(request, options.bodyLimit);
    if (body === null || typeof body !== 'object' || Array.isArray(body) || (body as { workflow?: unknown }).workflow !== 'outpainting') {
      // Every 405 names the methods the path answers (RFC 9110 15.5.6), as the router's do (server.ts).
      void reply.header('allow', 'GET, POST');
      throw new ApiError(405, 'method_not_allowed', 'GET /v1/predictions/queue accepts only an outpainting body; use POST for every workflow', [
        { field: 'workflow', rule: 'get_only_outpainting' },
      ]);
    }
    return create(request, reply, body);
  });

  // Without it HEAD would reach /v1/predictions/:id and answer a 404 for a prediction "queue".
  app.head('/v1/predictions/queue', { config: { refusesMethod: true } }, async (_request, reply) => {
    void reply.header('allow', 'GET, POST');
    throw new ApiError(405, 'method_not_allowed', '/v1/predictions/queue accepts GET, POST, not HEAD', [
      { field: 'method', rule: 'allowed_methods', message: 'use GET, POST' },
    ]);
  });

  app.get<{ Params: { id: string } }>('/v1/predictions/:id', async (request) => {
    const record = await options.reader.get(principalOf(request).userId, request.params.id);
    if (!record) throw notFound('prediction');
    return { success: true, data: record };
  });

  app.get('/v1/predictions', async (request) => {
    const query = parseListQuery(request.query);
    if (!query.ok) throw invalidRequest(query.details);
    const { limit, offset } = query.value;
    const { docs, totalDocs } = await listPredictions(db, principalOf(request).userId, { limit, offset });
    return { data: { docs, ...pageMeta(totalDocs, offset, limit) } };
  });
}

/** Printable ASCII without spaces, as the IETF draft and Stripe's keys are (a UUID fits). */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw invalidRequest([
      { field: 'idempotency-key', rule: 'format', message: 'Idempotency-Key must be one header of 1 to 255 printable ASCII characters without spaces (a UUID is a good key)' },
    ]);
  }
  return header;
}

async function readJsonBody(request: FastifyRequest, limit: number): Promise<unknown> {
  const type = request.headers['content-type'];
  const raw = await readBody(request, limit);
  if (raw.length === 0) return null;
  // As fastify's JSON parser takes a POST body: application/json, with any parameters; a body
  // without a type is refused too.
  if (!type || type.split(';')[0]!.trim().toLowerCase() !== 'application/json') {
    throw new ApiError(415, 'unsupported_media_type', 'send the body as Content-Type: application/json', [{ field: 'content-type', rule: 'application/json' }]);
  }
  const text = jsonBodyText(raw);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError(400, 'invalid_json', `the body is not valid JSON: ${(error as Error).message}`, [{ field: '', rule: 'json' }]);
  }
}

/**
 * The body, up to limit bytes. On overflow it stops collecting without destroying the
 * stream (a `for await` loop would): the 413 then goes out while the server reads and
 * discards the rest (server.ts), so a client still sending can read it.
 */
function readBody(request: FastifyRequest, limit: number): Promise<Buffer> {
  const stream = request.raw;
  return new Promise((resolve, reject) => {
    const body = new ByteCollector(Math.min(limit, 16 * 1024), limit);
    const stop = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      if (body.size + chunk.length <= limit) return void body.push(chunk);
      stop();
      reject(new ApiError(413, 'payload_too_large', `the body exceeds ${limit} bytes`, [{ field: '', rule: 'max_body_size' }]));
    };
    const onEnd = () => {
      stop();
      resolve(body.bytes());
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
  });
}
