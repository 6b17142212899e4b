import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Queryable } from '../../store/database.ts';
import { STATUS_RANK as RANK, type PredictionRecord } from '../../store/prediction-record.ts';
import { getPrediction } from '../../store/predictions.ts';
import type { FeedUpdate, PredictionFeed } from '../../queue/prediction-feed.ts';
import { principalOf, type ApiKeyCheck } from '../auth.ts';
import { notFound, streamLimitReached } from '../errors.ts';

export interface PredictionEventOptions {
  db: Queryable;
  feed: PredictionFeed;
  /** The key a stream was opened with is checked again at each read: a revoked one ends it. */
  keys: ApiKeyCheck;
  /** Streams one key may hold open on this replica (EVENT_STREAMS_PER_KEY); one more is 429. */
  maxPerKey: number;
  /** A comment line this often keeps proxies from closing a quiet stream. */
  keepAliveMs?: number;
  /** The record is read again this often even when no event was heard (one may be missed while NATS reconnects). */
  refreshMs?: number;
}

const KEEP_ALIVE_MS = 15_000;
const REFRESH_MS = 5_000;
/** A worker's status event reaches this replica before the (possibly other) replica applying it has written it. */
const APPLY_WAIT_MS = 200;
const APPLY_WAIT_TRIES = 25;

const isFinal = (record: PredictionRecord): boolean => record.status === 'executed' || record.status === 'failed';

/**
 * GET /v1/predictions/{id}/events: the prediction as server-sent events. `prediction` carries
 * the record (as GET returns it) at once and at every status change, `progress` the worker's
 * denoising steps; the stream ends after the record is final. Registered under the
 * prediction routes, so it needs the same x-api-key.
 */
export async function predictionEventRoutes(app: FastifyInstance, options: PredictionEventOptions): Promise<void> {
  const { db, feed, keys } = options;
  const keepAliveMs = options.keepAliveMs ?? KEEP_ALIVE_MS;
  const refreshMs = options.refreshMs ?? REFRESH_MS;
  /** Open streams, ended when the server closes (else app.close() would wait for them forever). */
  const open = new Set<() => void>();
  /** Set once the server closes: a stream whose first read was still running then ends after it. */
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    for (const end of [...open]) end();
  });
  /** Streams open (or opening) per key id: each holds two subscriptions and a read every refreshMs. */
  const perKey = new Map<string, number>();
  const countFor = (keyId: string, delta: number): void => {
    const next = (perKey.get(keyId) ?? 0) + delta;
    if (next > 0) perKey.set(keyId, next);
    else perKey.delete(keyId);
  };

  app.get<{ Params: { id: string } }>('/v1/predictions/:id/events', async (request, reply) => {
    const { userId, keyId } = principalOf(request);
    const id = request.params.id;
    if ((perKey.get(keyId) ?? 0) >= options.maxPerKey) throw streamLimitReached(options.maxPerKey);
    countFor(keyId, 1);
    let counted = true;
    const uncount = (): void => {
      if (counted) (counted = false), countFor(keyId, -1);
    };
    const updates: FeedUpdate[] = [];
    let wake: (() => void) | undefined;
    // Listen before the first read: an event published in between is then not lost.
    let unwatch: () => void = () => undefined;
    try {
      unwatch = feed.watch(id, (update) => {
        updates.push(update);
        wake?.();
      });
    } catch (error) {
      // NATS closed: the stream still works, on the periodic reads alone.
      request.log.warn({ err: error }, 'event stream without live updates');
    }
    // A client gone during the first read would never be told to the stream set up after it.
    let clientGone = false;
    const onClientGone = (): void => void (clientGone = true);
    reply.raw.once('close', onClientGone);
    let first: PredictionRecord | null;
    try {
      first = await getPrediction(db, userId, id);
    } catch (error) {
      unwatch();
      uncount();
      throw error;
    } finally {
      reply.raw.removeListener('close', onClientGone);
    }
    if (!first) {
      unwatch();
      uncount();
      throw notFound('prediction');
    }

    const stream = new PassThrough();
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      unwatch();
      uncount();
      clearInterval(keepAlive);
      open.delete(end);
      wake?.();
      stream.end();
    };
    open.add(end);
    const send = (event: string, data: unknown): void => {
      if (!ended) stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), keepAliveMs);
    reply.raw.once('close', end);
    if (clientGone) end();
    // Opened as the server closes: the record as it is, then the end (the client reconnects elsewhere).
    if (closing) send('prediction', first), end();

    void (async () => {
      let last = first;
      send('prediction', last);
      /** How far the workers say the prediction has gone; the record catches up when it is applied. */
      let heardRank = RANK[last.status];
      /** The furthest status already waited for: a status whose event is late (or lost) is waited for once, not on every pass. */
      let waitedRank = heardRank;
      /** The newest step not sent yet (an older one adds nothing). */
      let step: { step: number; total: number } | undefined;
      /** Takes what was heard; true when anything was. */
      const take = (): boolean => {
        const heard = updates.splice(0);
        for (const update of heard) {
          // A step means the job runs, even when it outran the worker's `executing` (a JetStream
          // publish, which may reach the server after the core-NATS step).
          if (update.kind === 'progress') {
            step = { step: update.step, total: update.total };
            heardRank = Math.max(heardRank, RANK.executing);
          } else {
            heardRank = Math.max(heardRank, RANK[update.status]);
          }
        }
        return heard.length > 0;
      };
      const sendStep = (): void => {
        // A step held while the final status was applied comes too late: the final record ends the stream.
        if (step && !isFinal(last)) send('progress', step);
        step = undefined;
      };
      /** When the record and the key were last read. */
      let readAt = Date.now();
      /** Reads the record; sends it when its status moved. Ends the stream once its key is revoked. */
      const refresh = async (): Promise<void> => {
        readAt = Date.now();
        if (!(await keys.stillValid(request))) {
          request.log.info({ predictionId: id }, 'event stream ended: its API key was revoked');
          return end();
        }
        const record = await getPrediction(db, userId, id);
        if (!record || record.status === last.status) return;
        last = record;
        send('prediction', record);
      };
      try {
        while (!ended && !isFinal(last)) {
          if (updates.length === 0) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, refreshMs);
              wake = () => (clearTimeout(timer), resolve());
            });
            wake = undefined;
          }
          const heard = take();
          if (ended) break;
          // A worker published a status the record does not show yet: wait for it to be applied,
          // holding the steps meanwhile, so that a client sees `executing` before its steps.
          for (let i = 0; i < APPLY_WAIT_TRIES && !ended && RANK[last.status] < heardRank && heardRank > waitedRank; i++) {
            await refresh();
            if (RANK[last.status] >= heardRank) break;
            await new Promise((resolve) => setTimeout(resolve, APPLY_WAIT_MS));
            take();
          }
          waitedRank = Math.max(waitedRank, heardRank);
          sendStep();
          // Nothing heard for a while: read anyway (a message lost while NATS reconnected). Steps
          // that keep coming do not put it off: the key is checked and the record read every refreshMs.
          if (!heard || Date.now() - readAt >= refreshMs) await refresh();
        }
      } catch (error) {
        // The database went away mid-stream: the client reconnects or polls, as after any drop.
        request.log.warn({ err: error }, 'event stream ended early');
      }
      end();
    })();

    return reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      // nginx and similar proxies buffer responses unless told not to; events must flow as they come.
      .header('x-accel-buffering', 'no')
      .send(stream);
  });
}
