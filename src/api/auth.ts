import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type Principal } from '../store/accounts.ts';
import { TtlCache } from '../util/ttl-cache.ts';
import type { Queryable } from '../store/database.ts';
import { unauthorized } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** onRequest hook: every /v1/predictions route needs a valid, unrevoked x-api-key. */
/**
 * Valid keys are remembered for cacheTtlMs (API_KEY_CACHE_TTL_MS), so a revocation takes
 * effect within that window; unknown keys are never cached.
 */
export function requireApiKey(db: Queryable, cacheTtlMs: number) {
  const known = new TtlCache<string, Principal>(cacheTtlMs);
  return async function checkApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers['x-api-key'];
    const presented = Array.isArray(header) ? header[0] : header;
    if (!presented) throw unauthorized('missing x-api-key header');
    let principal = known.get(presented) ?? null;
    if (!principal) {
      principal = await authenticate(db, presented);
      if (!principal) throw unauthorized('unknown or revoked API key');
      known.set(presented, principal);
    }
    request.principal = principal;
  };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized('missing x-api-key header');
  return request.principal;
}
