/**
 * The event stream of one prediction, GET /v1/predictions/{id}/events (text/event-stream).
 *
 * Read with fetch and eventsource-parser rather than EventSource, because EventSource cannot
 * send the x-api-key header. Events: `prediction` (the record, on connect and on every status
 * change; the server closes the stream after a terminal one) and `progress` ({step, total}).
 * Event names this client does not know are skipped, so a newer server may add some.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { errorFrom, QrArtApiError, QrArtConnectionError, type CallOptions, type Transport } from './http.ts';
import { PredictionRecordSchema, ProgressSchema, type PredictionRecord, type Progress } from './schemas.ts';

export type PredictionStreamEvent = { type: 'prediction'; record: PredictionRecord } | { type: 'progress'; progress: Progress };

/**
 * The server offers no event stream for this prediction: an older server without the route
 * (404, 405, 501) or something in between that answers another content type. Polling GET
 * /v1/predictions/{id} still works there (and says 404 itself when the id is unknown).
 */
export class EventStreamUnavailableError extends Error {
  override readonly name = 'EventStreamUnavailableError';
}

const NO_STREAM_STATUSES = new Set([404, 405, 501]);

export interface EventStreamOptions extends CallOptions {
  /**
   * A stream silent this long is given up (QrArtConnectionError). The server sends a keep-alive
   * every 15 s, so silence means a connection that died without a word (a host or network lost)
   * or a proxy that buffers the stream; either way reading on would wait for nothing.
   * Default 45 s.
   */
  idleTimeoutMs?: number;
}

const IDLE_TIMEOUT_MS = 45_000;

/**
 * Opens the stream and yields its events until the server ends it. Throws
 * EventStreamUnavailableError (see above), QrArtApiError for the API's other refusals (401,
 * 503...) and QrArtConnectionError when the server cannot be reached, the connection breaks or
 * the stream falls silent.
 */
export async function* predictionEvents(http: Transport, id: string, options: EventStreamOptions = {}): AsyncGenerator<PredictionStreamEvent, void, undefined> {
  const { signal } = options;
  const idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
  const path = `/v1/predictions/${encodeURIComponent(id)}/events`;
  const opening = new AbortController();
  const answer = http.stream(path, { headers: { accept: 'text/event-stream' }, signal: signal ? AbortSignal.any([signal, opening.signal]) : opening.signal });
  const response = await within(answer, idleTimeoutMs);
  if (response === null) {
    opening.abort();
    throw new QrArtConnectionError(`GET ${path} got no answer in ${idleTimeoutMs} ms`, { cause: new Error('stream idle') });
  }
  if (!response.ok) {
    if (NO_STREAM_STATUSES.has(response.status)) {
      await response.body?.cancel().catch(() => undefined);
      throw new EventStreamUnavailableError(`GET ${path} answered ${response.status}`);
    }
    throw await errorFrom(response);
  }
  if (!/^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '') || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new EventStreamUnavailableError(`GET ${path} answered ${response.headers.get('content-type') ?? 'no content type'}, not an event stream`);
  }

  const pending: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => void pending.push(message) });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let ended = false;
  let silent = false;
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>> | null;
      try {
        chunk = await within(reader.read(), idleTimeoutMs);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        throw new QrArtConnectionError(`the event stream of ${id} broke: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      if (chunk === null) {
        silent = true;
        throw new QrArtConnectionError(`the event stream of ${id} sent nothing for ${idleTimeoutMs} ms`, { cause: new Error('stream idle') });
      }
      const { value, done } = chunk;
      if (done) {
        ended = true;
        return;
      }
      parser.feed(decoder.decode(value, { stream: true }));
      while (pending.length > 0) {
        const event = toEvent(pending.shift()!, response);
        if (event) yield event;
      }
    }
  } finally {
    // The consumer stopped early. After a final record the server ends the stream at once:
    // reading that end lets the connection be reused, where cancelling would destroy it (and
    // Node's fetch then opens a spare one, which holds up the server's shutdown).
    if (!ended && !silent && !signal?.aborted) ended = await readToEnd(reader, DRAIN_MS);
    if (!ended) await reader.cancel().catch(() => undefined);
  }
}

/** How long a stream left early may take to end by itself before it is cut. */
const DRAIN_MS = 500;

/** Reads and discards until the stream ends (true) or ms pass (false). */
async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<boolean> {
  const drain = (async () => {
    for (;;) if ((await reader.read()).done) return true;
  })().catch(() => false);
  return (await within(drain, ms)) ?? false;
}

/** What `promise` settles to, or null when ms pass first. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function toEvent(message: EventSourceMessage, response: Response): PredictionStreamEvent | null {
  if (message.event !== 'prediction' && message.event !== 'progress') return null;
  let json: unknown;
  try {
    json = JSON.parse(message.data);
  } catch {
    throw streamError(response, `a ${message.event} event whose data is not JSON`);
  }
  if (message.event === 'prediction') {
    const record = PredictionRecordSchema.safeParse(json);
    if (!record.success) throw streamError(response, `a prediction event that is not a prediction record (${record.error.issues[0]?.message})`);
    return { type: 'prediction', record: record.data };
  }
  const progress = ProgressSchema.safeParse(json);
  if (!progress.success) throw streamError(response, `a progress event that is not {step, total} (${progress.error.issues[0]?.message})`);
  return { type: 'progress', progress: progress.data };
}

function streamError(response: Response, what: string): QrArtApiError {
  return new QrArtApiError(response.status, 'invalid_response', `the event stream sent ${what}`, [], null, response.headers.get('x-request-id'));
}
