// Calls to the qr-art API that serves this page. Every path is relative to the page, so the
// playground also works when the API is mounted under a sub-path.
import { createParser } from './vendor/eventsource-parser.js';

const KEY_STORAGE = 'qr-art.apiKey';

/** A rejected request, carrying the API's error body ({code, message, details[]}). */
export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    const error = body && typeof body === 'object' && body.error ? body.error : null;
    super(error?.message ?? `the API answered ${status}`);
    this.status = status;
    this.code = error?.code ?? 'http_error';
    this.details = Array.isArray(error?.details) ? error.details : [];
    this.retryAfter = retryAfter;
  }
}

const url = (path) => new URL(path, document.baseURI).href;

export function storedKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) ?? '';
  } catch {
    return '';
  }
}

export function storeKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch {
    /* storage disabled: the key lives for this page only */
  }
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    /* not JSON */
  }
  const retryAfter = Number(response.headers.get('retry-after')) || undefined;
  return new ApiError(response.status, body, retryAfter);
}

async function json(path, { key, method = 'GET', body, signal, headers: extra = {} } = {}) {
  const headers = { accept: 'application/json', ...extra };
  if (key !== undefined) headers['x-api-key'] = key;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** /openapi.json: the per-workflow request schemas the form is built from. */
export const openApi = () => json('openapi.json');

/** The control image of a layout: { blobUrl, layout: {width,height,codeSide,x,y,version}|null, credits|null }. */
export async function preview(body, signal) {
  const response = await fetch(url('v1/qr/preview'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'image/png' },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  let layout = null;
  try {
    layout = JSON.parse(response.headers.get('x-qr-layout') ?? 'null');
  } catch {
    /* absent or malformed: the picture alone */
  }
  const credits = response.headers.get('x-credits');
  const blob = await response.blob();
  return { blobUrl: URL.createObjectURL(blob), layout, credits: credits === null ? null : Number(credits) };
}

/** What a create would cost, and the normalized input: { workflow, credits, input }. */
export async function quote(body, signal) {
  return (await json('v1/predictions/quote', { method: 'POST', body, signal })).data;
}

/** idempotencyKey: the same for a repeat of a create that got no answer, so that it is charged at most once. */
export async function createPrediction(key, body, idempotencyKey) {
  return (await json('v1/predictions/queue', { key, method: 'POST', body, headers: { 'idempotency-key': idempotencyKey } })).data;
}

export async function getPrediction(key, id, signal) {
  return (await json(`v1/predictions/${encodeURIComponent(id)}`, { key, signal })).data;
}

export async function listPredictions(key, limit, offset) {
  return (await json(`v1/predictions?limit=${limit}&offset=${offset}`, { key })).data;
}

/**
 * The server sends a keep-alive every 15 s: a stream that answers nothing for this long is dead
 * (a connection lost without a word, a proxy holding the stream back), and a browser would
 * wait on it for good.
 */
const STREAM_IDLE_MS = 45_000;

/**
 * Follows GET /v1/predictions/{id}/events. EventSource cannot send x-api-key, so the body is
 * read with fetch and parsed with eventsource-parser. Resolves when the server ends the
 * stream; rejects when it cannot be opened, breaks or falls silent.
 */
export async function streamEvents(key, id, { onPrediction, onProgress, signal }) {
  const idle = new AbortController();
  let timer;
  const heard = () => {
    clearTimeout(timer);
    timer = setTimeout(() => idle.abort(new Error('the event stream fell silent')), STREAM_IDLE_MS);
  };
  heard();
  // The caller's abort ends it too (linked by hand: AbortSignal.any is missing from older Safari).
  const stop = () => idle.abort(signal.reason);
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  try {
    await readEvents(key, id, { onPrediction, onProgress, signal: idle.signal, heard });
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', stop);
  }
}

async function readEvents(key, id, { onPrediction, onProgress, signal, heard }) {
  const response = await fetch(url(`v1/predictions/${encodeURIComponent(id)}/events`), {
    headers: { 'x-api-key': key, accept: 'text/event-stream' },
    signal,
    cache: 'no-store',
  });
  if (!response.ok) throw await failure(response);
  if (!response.body || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    throw new Error('the events endpoint did not answer with a stream');
  }
  const parser = createParser({
    onEvent(event) {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      if (event.event === 'prediction') onPrediction(data);
      else if (event.event === 'progress') onProgress(data);
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    heard();
    parser.feed(value);
  }
}

/**
 * Turns an image URL of this API (…/v1/files/<name>) into one on the page's own origin, so the
 * page's Content-Security-Policy ('self') lets it load and `download` works, whatever
 * PUBLIC_BASE_URL the service builds its links from.
 */
export function sameOriginFile(imageUrl) {
  try {
    const parsed = new URL(imageUrl, document.baseURI);
    const at = parsed.pathname.indexOf('/v1/files/');
    return at >= 0 ? url(parsed.pathname.slice(at + 1)) : parsed.href;
  } catch {
    return imageUrl;
  }
}
