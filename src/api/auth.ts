import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type Principal } from '../store/accounts.ts';
import type { Queryable } from '../store/database.ts';
import { unauthorized } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** onRequest hook: every /v1/predictions route needs a valid, unrevoked x-api-key. */
export function requireApiKey(db: Queryable) {
  return async function checkApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers['x-api-key'];
    const presented = Array.isArray(header) ? header[0] : header;
    if (!presented) throw unauthorized('missing x-api-key header');
    const principal = await authenticate(db, presented);
    if (!principal) throw unauthorized('unknown or revoked API key');
    request.principal = principal;
  };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized('missing x-api-key header');
  return request.principal;
}
