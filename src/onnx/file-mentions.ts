/**
 * Whether any of some words occurs in a file's bytes: a cheap filter before decoding an ONNX file
 * (an op type that occurs in no node's bytes cannot be in the graph). Read in 16 MiB chunks, so a
 * 1.7 GB single-file UNet is never held in memory at once.
 */
import { open } from 'node:fs/promises';

export async function fileMentions(file: string, words: readonly string[]): Promise<boolean> {
  const needles = words.map((w) => Buffer.from(w));
  const overlap = Math.max(...needles.map((b) => b.length)) - 1;
  const fh = await open(file, 'r');
  try {
    const chunk = Buffer.alloc(16 * 2 ** 20);
    let carry = Buffer.alloc(0);
    for (let at = 0; ; ) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, at);
      if (bytesRead === 0) return false;
      const window = Buffer.concat([carry, chunk.subarray(0, bytesRead)]);
      if (needles.some((n) => window.includes(n))) return true;
      carry = Buffer.from(window.subarray(Math.max(0, window.length - overlap)));
      at += bytesRead;
    }
  } finally {
    await fh.close();
  }
}
