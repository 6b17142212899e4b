/**
 * Run by inference-close.test.ts in a process of its own (the faults it guards against abort the
 * whole process): a generation aborted at its first step, as a deadline does, while its step is
 * inside ONNX Runtime. Mode `close`: the client is closed at once, as a worker stopping then does.
 * Mode `overdue`: the abort grace (30 ms) runs out inside that step, then another generation is
 * run. Prints "done" and exits 0 when the process survives.
 */
import { pino } from 'pino';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import type { InferencePlan } from '../../src/worker/inference-protocol.ts';

const mode = process.argv[2] === 'overdue' ? 'overdue' : 'close';
const canvas = { width: 768, height: 768 };
const control = renderControlImage({ content: 'close', pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray', errorCorrectionLevel: 'H' }).image;
const plan = (steps: number): InferencePlan => ({
  workflow: 'generate_qr_art_v5', v5Model: 'universal', prompt: 'a harbour', seed: 1, batchSize: 2, steps, guidance: 7,
  scheduler: 'dpmpp_2m_karras', control, controlScale: 1.3, controlStart: 0, controlEnd: 1, ...canvas,
});
const client = await InferenceClient.start({
  manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1, warmUp: false,
  ...(mode === 'overdue' ? { abortGraceMs: 30 } : {}),
});
const deadline = new AbortController();
let closing: Promise<void> | undefined;
const run = client.run(plan(20), {
  signal: deadline.signal,
  onProgress: (step) => {
    if (step !== 1 || deadline.signal.aborted) return;
    deadline.abort(new Error('past its deadline'));
    if (mode === 'close') closing = client.close();
  },
});
await run.catch((error: Error) => console.log(`run: ${error.message}`));
if (mode === 'overdue') {
  const next = await client.run(plan(2));
  console.log(`next run: ${next.images.length} images, thread ${client.state}`);
  closing = client.close();
}
await closing;
console.log('done');
