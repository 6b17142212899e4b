/**
 * The finishing pool: worker threads that scan-check, repair and PNG-encode images while the
 * inference thread goes on with the next one (piscina: a maintained pool with task queueing,
 * transfer lists and clean shutdown, rather than a hand-rolled one). Sized to the machine: every
 * core but one, which the main thread and the inference thread's own work need.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { RawImage } from '../image/raw.ts';
import type { FinishResult, FinishTask, ScanTask } from './finish-task.ts';
import { toWire } from './inference-protocol.ts';

export type { FinishResult, ScanTask } from './finish-task.ts';

/** Every core but one, at least one thread. */
export const defaultFinishThreads = (): number => Math.max(1, availableParallelism() - 1);

export class FinishPool {
  private readonly pool: Piscina<FinishTask, FinishResult>;

  constructor(threads = defaultFinishThreads()) {
    const fromSource = import.meta.url.endsWith('.ts');
    this.pool = new Piscina({
      filename: fileURLToPath(new URL(fromSource ? './finish-task.ts' : './finish-task.js', import.meta.url)),
      // From source the threads need tsx's loader to import TypeScript (piscina's own entry is plain
      // JS). Resolved here, from this package: a bare 'tsx' is resolved from the working directory,
      // which is not this package's when qr-art runs elsewhere.
      ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY,
    });
  }

  get threads(): number {
    return this.pool.maxThreads;
  }

  /** Scan check (+ repair) and PNG of one image; the image's pixels are copied to the thread. */
  async finish(image: RawImage, scan?: ScanTask): Promise<FinishResult> {
    const { wire, transfer } = toWire({ ...image, data: image.data.slice() });
    return this.pool.run({ image: wire, ...(scan ? { scan } : {}) }, { transferList: [transfer] });
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
