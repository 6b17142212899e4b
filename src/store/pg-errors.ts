/**
 * Which node-postgres failures mean "the server cannot be reached or cannot serve right now"
 * (retry later) rather than "this statement is wrong" (a bug of ours). Only the former become
 * DependencyUnavailableError; anything else stays a 500, so a real bug is not hidden as an outage.
 */

/** Socket-level failures while connecting or talking to the server. */
const NETWORK_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/**
 * SQLSTATEs of an unavailable server: class 08 (connection exception), operator or crash
 * shutdown and "starting up" (57P01-57P03), statement timeout and cancellation (57014: our
 * statement_timeout fired), too many connections (53300) and other resource exhaustion (53),
 * and a read-only transaction (25006): during a failover a connection can reach the old
 * primary once it serves again as a standby, which refuses every write until the address
 * points at the new primary.
 */
function isUnavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code.startsWith('53') || code === '57P01' || code === '57P02' || code === '57P03' || code === '57014' || code === '25006';
}

/** Messages node-postgres and pg-pool raise without a code (timeouts, a dropped connection). */
const DRIVER_MESSAGES = [
  'Query read timeout',
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'connection timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_ERRNOS.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code)))) return true;
  if (DRIVER_MESSAGES.some((text) => error.message.includes(text))) return true;
  // AggregateError from a connect to several addresses (localhost: ::1 and 127.0.0.1).
  if (error instanceof AggregateError) return error.errors.some(isConnectionFailure);
  return error.cause !== undefined && error.cause !== error && isConnectionFailure(error.cause);
}
