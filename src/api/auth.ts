import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type Principal } from '../store/accounts.ts';
import { TtlCache } from '../util/ttl-cache.ts';
import type { Queryable } from '../store/database.ts';
import { ApiError, unauthorized } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/**
 * Every /v1/predictions route needs a valid, unrevoked x-api-key (`hook`, an onRequest hook).
 * Valid keys are remembered for cacheTtlMs (API_KEY_CACHE_TTL_MS), so a revocation takes effect
 * within that window; unknown keys are never cached. A long-lived response (an event stream)
 * asks `stillValid` again as it goes, so it ends within that window too.
 */
export class ApiKeyCheck {
  private readonly known: TtlCache<string, Principal>;

  constructor(
    private readonly db: Queryable,
    cacheTtlMs: number,
  ) {
    this.known = new TtlCache<string, Principal>(cacheTtlMs);
  }

  readonly hook = async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    // Node joins repeated headers with ", ", which would be looked up as one unknown key.
    if (keyHeaderCount(request) > 1) {
      throw new ApiError(401, 'unauthorized', 'send the x-api-key header once', [{ field: 'x-api-key', rule: 'repeated', message: 'send the x-api-key header once' }]);
    }
    const presented = presentedKeyOf(request);
    if (!presented) throw unauthorized('missing x-api-key header');
    const principal = await this.principalFor(presented);
    if (!principal) throw unauthorized('unknown or revoked API key');
    request.principal = principal;
  };

  /** Whether the key this request was let in with is still valid (cached like the hook's check). */
  async stillValid(request: FastifyRequest): Promise<boolean> {
    const presented = presentedKeyOf(request);
    return presented !== undefined && (await this.principalFor(presented))?.keyId === request.principal?.keyId;
  }

  private async principalFor(presented: string): Promise<Principal | null> {
    const cached = this.known.get(presented);
    if (cached) return cached;
    const principal = await authenticate(this.db, presented);
    if (principal) this.known.set(presented, principal);
    return principal;
  }
}

function keyHeaderCount(request: FastifyRequest): number {
  let count = 0;
  const raw = request.raw.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'x-api-key') count++;
  return count;
}

function presentedKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers['x-api-key'];
  return (Array.isArray(header) ? header[0] : header) || undefined;
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized('missing x-api-key header');
  return request.principal;
}
