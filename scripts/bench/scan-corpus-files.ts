/** A scan corpus on disk: PNG files and the corpus.json that lists them (scan-corpus-make.ts writes both). */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeImage } from '../../src/image/decode.ts';
import type { RawImage } from '../../src/image/raw.ts';

export interface CorpusEntry {
  readonly file: string;
  /** The content the code encodes. */
  readonly expected: string;
  /** Side of the code in the image, px (the scan check's hint). */
  readonly codeSide: number;
  /** 'art': as generated; 'styled': made by image operations; '…capture': its simulated phone photo. */
  readonly kind: 'art' | 'capture' | 'styled' | 'styled-capture';
  readonly workflow?: string;
  readonly pattern?: string;
  readonly version?: number;
  /** For styled images: which operations made it. */
  readonly style?: string;
}

export interface CorpusImage extends CorpusEntry {
  readonly image: RawImage;
}

export async function readCorpus(dir: string): Promise<CorpusImage[]> {
  const { entries } = JSON.parse(await readFile(join(dir, 'corpus.json'), 'utf8')) as { entries: CorpusEntry[] };
  const out: CorpusImage[] = [];
  for (const entry of entries) {
    const image = await decodeImage(await readFile(join(dir, entry.file)), { maxPixels: 40_000_000, channels: 3 });
    out.push({ ...entry, image });
  }
  return out;
}
