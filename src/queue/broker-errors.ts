import { errors } from '@nats-io/nats-core';
import { DependencyUnavailableError } from '../util/unavailable.ts';

/** What a client should wait before retrying while NATS is away. */
const RETRY_AFTER_SECONDS = 2;

const UNAVAILABLE = [errors.TimeoutError, errors.ClosedConnectionError, errors.ConnectionError, errors.DrainingConnectionError, errors.NoRespondersError, errors.RequestError];

/**
 * NATS failures that mean "the broker (or JetStream) cannot serve right now": a request
 * timed out or found no responder, the connection is closed, draining or reconnecting, or
 * JetStream answered 503 (no quorum, restarting). Anything else is not an outage.
 */
export function isBrokerFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (UNAVAILABLE.some((kind) => error instanceof kind)) return true;
  const status = (error as { code?: unknown; status?: unknown }).status ?? (error as { code?: unknown }).code;
  if (status === 503 || status === '503') return true;
  return error.cause !== undefined && error.cause !== error && isBrokerFailure(error.cause);
}

/** Rethrows a broker failure as DependencyUnavailableError; any other error as it is. */
export function asBrokerUnavailable(error: unknown): never {
  if (isBrokerFailure(error)) throw brokerUnavailable(error);
  throw error;
}

export const brokerUnavailable = (cause?: unknown) => new DependencyUnavailableError('broker', RETRY_AFTER_SECONDS, { cause });
