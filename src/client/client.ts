/** QrArtClient: the API's calls as methods, over one Transport (base URL, key, fetch, retry rule). */
import type { CreateBody } from './bodies.ts';
import { Transport, type CallOptions, type QrArtClientOptions } from './http.ts';
import {
  createPrediction,
  downloadFile,
  getPrediction,
  listAllPredictions,
  listPredictions,
  quotePrediction,
  type CreateOptions,
  type ListAllOptions,
  type ListOptions,
} from './predictions.ts';
import type { ListedPrediction, PredictionPage, PredictionRecord, Quote } from './schemas.ts';
import { waitForPrediction, type WaitOptions } from './wait.ts';
import { predictionEvents, type EventStreamOptions, type PredictionStreamEvent } from './events.ts';

export class QrArtClient {
  private readonly http: Transport;

  constructor(options: QrArtClientOptions) {
    this.http = new Transport(options);
  }

  /** The base URL requests go to (without a trailing slash). */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** Creates a prediction (charged now); the record comes back queued. The body's type follows its `workflow`. */
  create(body: CreateBody, options?: CreateOptions): Promise<PredictionRecord> {
    return createPrediction(this.http, body, options);
  }

  get(id: string, options?: CallOptions): Promise<PredictionRecord> {
    return getPrediction(this.http, id, options);
  }

  /** One page, newest first. */
  list(options?: ListOptions): Promise<PredictionPage> {
    return listPredictions(this.http, options);
  }

  /** Every prediction, newest first: `for await (const p of client.listAll()) ...`. */
  listAll(options?: ListAllOptions): AsyncGenerator<ListedPrediction, void, undefined> {
    return listAllPredictions(this.http, options);
  }

  /** Price and normalized input of a body, without creating anything. */
  quote(body: CreateBody, options?: CallOptions): Promise<Quote> {
    return quotePrediction(this.http, body, options);
  }

  /** Until executed or failed: follows the event stream, polls where there is none. */
  wait(id: string, options?: WaitOptions): Promise<PredictionRecord> {
    return waitForPrediction(this.http, id, options);
  }

  /**
   * The raw event stream of a prediction: `for await (const event of client.events(id)) ...`
   * (`prediction` records and `progress` steps; it ends after the final record). `wait` is this
   * plus reconnecting and polling.
   */
  events(id: string, options: EventStreamOptions = {}): AsyncGenerator<PredictionStreamEvent, void, undefined> {
    return predictionEvents(this.http, id, options);
  }

  /** The bytes of an output image URL; sent without the key (the URL is its own capability). */
  download(url: string, options?: CallOptions): Promise<Uint8Array> {
    return downloadFile(this.http, url, options);
  }
}
