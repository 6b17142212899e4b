import type { FastifyError } from 'fastify';
import { DependencyUnavailableError } from '../util/unavailable.ts';
import { CreateOutcomeUnknownError } from '../predictions/create.ts';

/** `details` entry of the error body: which field broke which rule. */
export interface ErrorDetail {
  field: string;
  rule: string;
  message?: string;
}

export type ErrorCode =
  | 'invalid_request'
  | 'invalid_json'
  | 'unsupported_media_type'
  | 'payload_too_large'
  | 'request_timeout'
  | 'unauthorized'
  | 'insufficient_credits'
  | 'idempotency_key_reused'
  | 'not_found'
  | 'method_not_allowed'
  | 'rate_limited'
  | 'precondition_failed'
  | 'range_not_satisfiable'
  | 'service_unavailable'
  | 'internal_error';

/**
 * Every rejected request gets this one body:
 * {"success":false,"error":{"code","message","details":[{"field","rule","message"}]}}
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Sent as Retry-After: when trying again makes sense (503). */
    readonly retryAfterSeconds?: number,
    /** Other headers the answer needs (a 416's Content-Range). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  toBody() {
    return { success: false as const, error: { code: this.code, message: this.message, details: this.details } };
  }
}

export const invalidRequest = (details: ErrorDetail[], message?: string) =>
  new ApiError(
    400,
    'invalid_request',
    message ?? (details.length === 1 && details[0]!.message ? details[0]!.message : `the request has ${details.length} invalid fields`),
    details,
  );

export const unauthorized = (message: string) => new ApiError(401, 'unauthorized', message, [{ field: 'x-api-key', rule: 'valid_api_key' }]);

export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);

/** Retry-After of an event stream refused for its key's count: streams end as predictions finish. */
const STREAM_LIMIT_RETRY_S = 5;

/** EVENT_STREAMS_PER_KEY's default: streams one key may hold open on one replica. */
export const DEFAULT_EVENT_STREAMS_PER_KEY = 100;

/** The key already holds EVENT_STREAMS_PER_KEY event streams on this replica. */
export const streamLimitReached = (max: number) => {
  const message = `this API key has ${max} event streams open on this server (EVENT_STREAMS_PER_KEY); close one, or poll GET /v1/predictions/{id}`;
  return new ApiError(429, 'rate_limited', message, [{ field: 'x-api-key', rule: 'stream_limit', message }], STREAM_LIMIT_RETRY_S);
};

/** A dependency outage: nothing was done, the same request may be sent again after Retry-After. */
export const serviceUnavailable = (error: DependencyUnavailableError) =>
  error instanceof CreateOutcomeUnknownError
    ? new ApiError(
        503,
        'service_unavailable',
        `the database stopped answering while this create was being committed, so it may have been made and charged: send it again with the same Idempotency-Key (charged at most once), or list your predictions before creating it again; retry after ${error.retryAfterSeconds} s`,
        [{ field: '', rule: 'create_outcome_unknown' }],
        error.retryAfterSeconds,
      )
    : new ApiError(
    503,
    'service_unavailable',
    `the service is temporarily unavailable (${error.dependency}); nothing was changed, retry after ${error.retryAfterSeconds} s`,
    [{ field: '', rule: `${error.dependency}_available` }],
    error.retryAfterSeconds,
  );

/** Maps fastify's own errors (body parsing, size, media type) to our body; anything else is a 500. */
export function toApiError(error: FastifyError | Error, requestHeaders: Readonly<Record<string, unknown>> = {}): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DependencyUnavailableError) return serviceUnavailable(error);
  const code = (error as FastifyError).code;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'invalid_json', `the body is not valid JSON: ${error.message}`, [{ field: '', rule: 'json' }]);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'payload_too_large', error.message, [{ field: '', rule: 'max_body_size' }]);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(415, 'unsupported_media_type', 'send the body as Content-Type: application/json', [{ field: 'content-type', rule: 'application/json' }]);
    case 'FST_ERR_BAD_URL':
      return new ApiError(400, 'invalid_request', 'the URL path is not validly percent-encoded', [{ field: 'path', rule: 'url_encoding' }]);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No prediction id or file name is that long: the resource cannot exist.
      return notFound('resource');
  }
  const fileAnswer = staticFileError(error, requestHeaders);
  if (fileAnswer) return fileAnswer;
  // Errors thrown by JSON.parse inside fastify's parser carry statusCode 400.
  if ((error as FastifyError).statusCode === 400) {
    return new ApiError(400, 'invalid_json', `the body is not valid JSON: ${error.message}`, [{ field: '', rule: 'json' }]);
  }
  return new ApiError(500, 'internal_error', 'internal error');
}

/**
 * The static files' sender (@fastify/static, @fastify/send: the playground, /docs's assets) refuses
 * a path it will not serve (a folder, `..`, a NUL byte, a name too long) with a 403: to a client, a
 * file that is not there. A precondition that does not hold (If-Match, If-Unmodified-Since) and a
 * range past the file's end are the request's, answered as such; none is a fault of ours.
 */
function staticFileError(error: Error & { code?: string; statusCode?: number; headers?: Record<string, string> }, requestHeaders: Readonly<Record<string, unknown>>): ApiError | undefined {
  switch (error.code === 'FST_STATIC_FORBIDDEN_PATH' ? 403 : error.name === 'PreconditionFailedError' || error.name === 'RangeNotSatisfiableError' ? error.statusCode : undefined) {
    case 403:
      return notFound('file');
    case 412: {
      const field = requestHeaders['if-match'] !== undefined ? 'if-match' : 'if-unmodified-since';
      const message = `the file does not meet the request's ${field} precondition`;
      return new ApiError(412, 'precondition_failed', message, [{ field, rule: 'precondition', message }]);
    }
    case 416: {
      const message = 'the Range asked for lies outside the file (it starts past the end, or ends before it starts)';
      const contentRange = error.headers?.['Content-Range'];
      return new ApiError(416, 'range_not_satisfiable', message, [{ field: 'range', rule: 'satisfiable', message }], undefined, contentRange ? { 'content-range': contentRange } : {});
    }
  }
  return undefined;
}
