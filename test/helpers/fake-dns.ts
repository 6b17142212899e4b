import type { LookupAddress } from 'node:dns';
import type { LookupAllFn } from '../../src/net/safe-url.ts';

/** A resolver answering from a table (host → addresses), recording every host asked; unknown hosts are ENOTFOUND. */
export function fakeLookup(table: Record<string, string[]>): LookupAllFn & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string): Promise<LookupAddress[]> => {
    calls.push(host);
    const addrs = table[host];
    if (!addrs) {
      const err = new Error(`getaddrinfo ENOTFOUND ${host}`) as NodeJS.ErrnoException;
      err.code = 'ENOTFOUND';
      throw err;
    }
    return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(fn, { calls });
}
