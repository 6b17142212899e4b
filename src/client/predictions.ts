/** The prediction calls of docs/api.md: create, get, list (one page, or every page), quote, and image downloads. */
import type { CreateBody } from './bodies.ts';
import type { CallOptions, Transport } from './http.ts';
import {
  ListEnvelopeSchema,
  PredictionEnvelopeSchema,
  QuoteEnvelopeSchema,
  type ListedPrediction,
  type PredictionPage,
  type PredictionRecord,
  type Quote,
} from './schemas.ts';

export interface CreateOptions extends CallOptions {
  /**
   * Idempotency-Key (1 to 255 printable ASCII characters, a UUID is a good one): a repeat with
   * the same key and body returns the first prediction and charges nothing, so the client may
   * then retry a 503 or a lost connection by itself. Without a key it never retries a create.
   */
  idempotencyKey?: string;
}

export interface ListOptions extends CallOptions {
  /** 1 to 100; default 10 (the server's). */
  limit?: number;
  /** ≥ 0; default 0. */
  offset?: number;
  /** 1-based page of `limit` predictions, instead of `offset` (the server answers 400 for both). */
  page?: number;
}

export interface ListAllOptions extends CallOptions {
  /** Page size of the underlying list calls, 1 to 100; default 100 (fewest calls). */
  pageSize?: number;
}

/** Path segments are encoded: an id is the caller's input and must not reach another route. */
const predictionPath = (id: string) => `/v1/predictions/${encodeURIComponent(id)}`;

export async function createPrediction(http: Transport, body: CreateBody, options: CreateOptions = {}): Promise<PredictionRecord> {
  const key = options.idempotencyKey;
  const envelope = await http.request({
    method: 'POST',
    path: '/v1/predictions/queue',
    schema: PredictionEnvelopeSchema,
    body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
    auth: true,
    retry: key !== undefined,
    signal: options.signal,
  });
  return envelope.data;
}

export async function getPrediction(http: Transport, id: string, options: CallOptions = {}): Promise<PredictionRecord> {
  const envelope = await http.request({ method: 'GET', path: predictionPath(id), schema: PredictionEnvelopeSchema, auth: true, retry: true, signal: options.signal });
  return envelope.data;
}

export async function listPredictions(http: Transport, options: ListOptions = {}): Promise<PredictionPage> {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.offset !== undefined) query.set('offset', String(options.offset));
  if (options.page !== undefined) query.set('page', String(options.page));
  const search = query.toString();
  const suffix = search === '' ? '' : `?${search}`;
  const envelope = await http.request({ method: 'GET', path: `/v1/predictions${suffix}`, schema: ListEnvelopeSchema, auth: true, retry: true, signal: options.signal });
  return envelope.data;
}

/**
 * Every prediction of the caller, newest first, page after page. The list is offset-paged
 * over a newest-first order, so a prediction created meanwhile pushes older ones one place
 * down and the next page would repeat the last one: ids already yielded are skipped. (One
 * created during the walk is not yielded: it sorts before the pages already read.)
 */
export async function* listAllPredictions(http: Transport, options: ListAllOptions = {}): AsyncGenerator<ListedPrediction, void, undefined> {
  const limit = options.pageSize ?? 100;
  const seen = new Set<string>();
  for (let offset = 0; ; offset += limit) {
    const page = await listPredictions(http, { limit, offset, signal: options.signal });
    for (const doc of page.docs) {
      if (seen.has(doc.id)) continue;
      seen.add(doc.id);
      yield doc;
    }
    if (!page.hasNextPage || page.docs.length === 0) return;
  }
}

/** What a create with this body would cost and record; free, no key, rate-limited per client address. */
export async function quotePrediction(http: Transport, body: CreateBody, options: CallOptions = {}): Promise<Quote> {
  const envelope = await http.request({ method: 'POST', path: '/v1/predictions/quote', schema: QuoteEnvelopeSchema, body, auth: false, retry: true, signal: options.signal });
  return envelope.data;
}

/** The bytes of an output file URL (record.output.images[i]). */
export function downloadFile(http: Transport, url: string, options: CallOptions = {}): Promise<Uint8Array> {
  return http.download(url, options.signal);
}
