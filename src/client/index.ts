/**
 * The qr-art API client (`import { QrArtClient } from 'qr-art'`); docs/client.md.
 * It loads nothing of the server at run time: zod, eventsource-parser and standardwebhooks only.
 */
export { QrArtClient } from './client.ts';
export { QrArtApiError, QrArtConnectionError, type CallOptions, type QrArtClientOptions } from './http.ts';
export type { CreateOptions, ListAllOptions, ListOptions } from './predictions.ts';
export type { WaitOptions } from './wait.ts';
export { EventStreamUnavailableError, type EventStreamOptions, type PredictionStreamEvent } from './events.ts';
export { verifyWebhook, QrArtWebhookError, type WebhookEvent, type WebhookRequestHeaders } from './webhooks.ts';
export {
  isTerminalStatus,
  PREDICTION_STATUSES,
  type ErrorDetail,
  type ListedPrediction,
  type PredictionEnvelope,
  type PredictionError,
  type PredictionOutput,
  type PredictionPage,
  type PredictionRecord,
  type PredictionStatus,
  type Progress,
  type Quote,
} from './schemas.ts';
export type * from './bodies.ts';
