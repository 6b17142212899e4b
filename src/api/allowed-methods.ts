/**
 * Which methods the API answers at a path, so that a known path asked with another method is
 * told 405 and what it accepts (RFC 9110 15.5.6: a 405 carries Allow), not 404 "no route".
 *
 * fastify's own router only says that nothing matched. find-my-way (fastify's router) matches a
 * concrete path against the same route patterns, parameters and static prefixes included.
 */
import FindMyWay from 'find-my-way';

type HTTPMethod = FindMyWay.HTTPMethod;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route exists only to answer its method 405 where the router would otherwise hand it
     * to a wider pattern (HEAD /v1/predictions/queue would reach /v1/predictions/:id): it is
     * not counted among the methods the path accepts.
     */
    refusesMethod?: boolean;
  }
}

export class AllowedMethods {
  private readonly router = FindMyWay();
  private readonly methods = new Set<HTTPMethod>();

  /** Records a route: one method or several (fastify's route.method) at one pattern; `refused` for a refusesMethod route. */
  add(method: string | string[], url: string, refused = false): void {
    for (const one of [method].flat() as HTTPMethod[]) this.addOne(one, url, refused);
  }

  private addOne(method: HTTPMethod, url: string, refused: boolean): void {
    this.methods.add(method);
    // The same pattern is registered once per method; find-my-way refuses a duplicate.
    if (!this.router.hasRoute(method, url)) this.router.on(method, url, () => undefined, { refused });
  }

  /** The methods some route answers at `url` as requested (its query string ignored), sorted. */
  at(url: string): string[] {
    return [...this.methods]
      .filter((method) => {
        // The route the router would pick: a refusing static route hides a wider pattern's.
        const found = this.router.find(method, url);
        return found !== null && !(found.store as { refused: boolean }).refused;
      })
      .sort();
  }
}
