import { describe, expect, it } from 'vitest';
import { ByteCollector } from '../../src/util/byte-collector.ts';

describe('ByteCollector', () => {
  it('gathers chunks of any size, one byte or many, into the bytes sent, growing past its first size', () => {
    const sent = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 31) % 256));
    const body = new ByteCollector(16, 1 << 20);
    let at = 0;
    for (const size of [1, 1, 7, 300, 1, 4096, 1]) {
      body.push(sent.subarray(at, at + size));
      at += size;
    }
    body.push(sent.subarray(at));
    expect(body.size).toBe(sent.length);
    expect(Buffer.compare(body.bytes(), sent)).toBe(0);
  });

  it('allocates no more than its limit up front, whatever length is declared', () => {
    const body = new ByteCollector(10 ** 9, 1024);
    body.push(Buffer.alloc(1024, 7));
    expect(body.bytes()).toEqual(Buffer.alloc(1024, 7));
  });

  it('starts empty: nothing pushed, no bytes', () => {
    expect(new ByteCollector(0, 100).bytes().length).toBe(0);
  });
});
