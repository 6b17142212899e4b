/**
 * mulberry32: a tiny seeded uniform PRNG in [0, 1), for reproducible test data, fuzz input and
 * demo-graph weights. Not for sampling noise (src/pipeline/random.ts) and not cryptographic.
 */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
