import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ApiError } from './errors.ts';

/** What a request that arrives while the instance stops is told to wait: another replica answers now. */
const RETRY_AFTER_CLOSING_S = 1;

/** How long a connection we ended gets to close its side before it is destroyed. */
const END_GRACE_MS = 1000;

/**
 * How app.close() ends the API's connections: requests in flight finish (up to `graceMs`),
 * nothing else holds the stop.
 *
 * Node closes the connections it counts as idle once, when the server stops listening. It
 * misses two kinds, each of which would hold the stop for the keep-alive timeout (72 s): a
 * connection the client opened and never used (Node counts it as waiting for its first
 * headers, and stops checking that timeout when the server closes), and a keep-alive
 * connection whose request was still running then. So each connection is tracked as busy
 * from a request's arrival until its response ends; at the stop the ones not busy are
 * ended, and each busy one as its last response ends. What is still open after `graceMs`
 * is closed.
 *
 * A request that arrives on a kept connection during the stop is answered 503 in our error
 * body, with Retry-After (fastify's own 503 has another body), and the connection is ended.
 */
export function closeGracefully(app: FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>, graceMs: number): void {
  const open = new Set<Socket>();
  const requestsOn = new Map<Socket, number>();
  let closing = false;
  let deadline: NodeJS.Timeout | undefined;

  const end = (socket: Socket) => {
    socket.end();
    setTimeout(() => socket.destroy(), END_GRACE_MS).unref();
  };
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      requestsOn.delete(socket);
    });
  });
  app.server.on('request', (request, response) => {
    const socket = request.socket;
    requestsOn.set(socket, (requestsOn.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (requestsOn.get(socket) ?? 1) - 1;
      if (left > 0) requestsOn.set(socket, left);
      else {
        requestsOn.delete(socket);
        if (closing) end(socket);
      }
    });
  });

  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    const error = new ApiError(
      503,
      'service_unavailable',
      `this instance is shutting down; nothing was changed, send the request again`,
      [{ field: '', rule: 'instance_available' }],
      RETRY_AFTER_CLOSING_S,
    );
    return reply.code(503).header('retry-after', String(RETRY_AFTER_CLOSING_S)).send(error.toBody());
  });
  app.addHook('preClose', async () => {
    closing = true;
    for (const socket of open) if (!requestsOn.has(socket)) end(socket);
    deadline = setTimeout(() => app.server.closeAllConnections(), graceMs);
  });
  app.addHook('onClose', async () => clearTimeout(deadline));
}
