/**
 * A body's bytes gathered into one buffer as they arrive. Keeping each chunk as it came instead
 * costs a Buffer object per chunk (hundreds of bytes each): a sender that splits its body into
 * one-byte chunks (chunked transfer encoding) made a body under a 20 MiB cap hold gigabytes.
 */
export class ByteCollector {
  private buffer: Buffer;
  private length = 0;

  /** `expected`: the first allocation (a declared Content-Length, within `max`); it grows by doubling up to `max`. */
  constructor(
    expected: number,
    private readonly max: number,
  ) {
    this.buffer = Buffer.allocUnsafe(Math.max(0, Math.min(expected, max)));
  }

  get size(): number {
    return this.length;
  }

  push(chunk: Uint8Array): void {
    const needed = this.length + chunk.length;
    if (needed > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, Math.min(this.buffer.length * 2, this.max)));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.buffer.set(chunk, this.length);
    this.length = needed;
  }

  /** What arrived so far (a view; copy it to keep it past another push). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}
