/**
 * Run by inference-close.test.ts in a process of its own (the fault it guards against aborts the
 * whole process): a generation aborted at its first step, as a deadline does, and the client
 * closed at once, as a worker stopping then does. Prints "closed" and exits 0 when it survives.
 */
import { pino } from 'pino';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';

const canvas = { width: 768, height: 768 };
const control = renderControlImage({ content: 'close', pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray', errorCorrectionLevel: 'H' }).image;
const client = await InferenceClient.start({ manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, warmUp: false });
const deadline = new AbortController();
let closing: Promise<void> | undefined;
const run = client.run(
  { workflow: 'generate_qr_art_v5', v5Model: 'universal', prompt: 'a harbour', seed: 1, batchSize: 2, steps: 20, guidance: 7, scheduler: 'dpmpp_2m_karras', control, controlScale: 1.3, controlStart: 0, controlEnd: 1, ...canvas },
  {
    signal: deadline.signal,
    onProgress: (step) => {
      if (step !== 1 || closing) return;
      deadline.abort(new Error('past its deadline'));
      closing = client.close();
    },
  },
);
await run.catch((error: Error) => console.log(`run: ${error.message}`));
await closing;
console.log('closed');
