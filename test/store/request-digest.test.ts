import { describe, expect, it } from 'vitest';
import { requestDigest } from '../../src/store/idempotency.ts';

/**
 * The digest an Idempotency-Key is stored with. Keys live for a day, across upgrades: a digest
 * that changed for the same body would turn a client's honest retry into a 422.
 */
describe('requestDigest', () => {
  it('is the same for the same body whatever its key order', () => {
    expect(requestDigest({ a: 1, b: [1, { d: 2, c: 3 }] })).toBe(requestDigest({ b: [1, { c: 3, d: 2 }], a: 1 }));
    expect(requestDigest({ a: [1, 2] })).not.toBe(requestDigest({ a: [2, 1] }));
  });

  it('gives the digests stored by earlier releases (sha-256 of the sorted JSON)', () => {
    const body = {
      workflow: 'generate_qr_art_v5',
      prompt: 'a koi pond, "quoted" \u00e9',
      qrContent: 'https://example.com',
      steps: 20,
      seed: 12345,
      nested: { b: [1, 2, { z: null, a: true }], a: [] },
      empty: {},
      x: -0.5,
    };
    expect(requestDigest(body)).toBe('fcf56292d831ec7b18a4655577dab8c05b5bfb0a76b722a3689bb62404ba9345');
    expect(requestDigest([1, 'a', null])).toBe('6f9c54658fdbc2f155e7105e0ad633c8c03e83b677a6b8a5dfb7541264b83622');
    expect(requestDigest(null)).toBe('74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b');
  });

  it('takes a body nested deeper than the call stack', () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(requestDigest({ x: deep })).toMatch(/^[0-9a-f]{64}$/);
  });
});
