/**
 * Run by inference-close.test.ts in a process of its own (the faults it guards against abort the
 * whole process): a generation aborted at its first step, as a deadline does, while its step is
 * inside ONNX Runtime. Mode `close`: the client is closed at once, as a worker stopping then does.
 * Mode `overdue`: the abort grace (30 ms) runs out inside that step, then another generation is
 * run. Mode `warm-up`: the thread crashes (the fault drill) and the client is closed while the
 * restarted thread warms up, its runs inside ONNX Runtime. Prints "done" and exits 0 when the
 * process survives.
 */
import { pino } from 'pino';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';
import { DEFAULT_MANIFEST_PATH, InferenceClient } from '../../src/worker/inference-client.ts';
import { IN_ONNX_RUNTIME_WORD, type InferencePlan } from '../../src/worker/inference-protocol.ts';

const mode = process.argv[2] === 'overdue' || process.argv[2] === 'warm-up' ? process.argv[2] : 'close';
const canvas = { width: 768, height: 768 };
const control = renderControlImage({ content: 'close', pattern: 's1', canvas, placement: placementFor(canvas, 0.8), background: 'gray', errorCorrectionLevel: 'H' }).image;
const plan = (steps: number): InferencePlan => ({
  workflow: 'generate_qr_art_v5', v5Model: 'universal', prompt: 'a harbour', seed: 1, batchSize: 2, steps, guidance: 7,
  scheduler: 'dpmpp_2m_karras', control, controlScale: 1.3, controlStart: 0, controlEnd: 1, ...canvas,
});
const client = await InferenceClient.start({
  manifestPath: DEFAULT_MANIFEST_PATH, executionProvider: { provider: 'cpu' }, logger: pino({ level: 'silent' }), intraOpThreads: 1,
  warmUp: mode === 'warm-up' ? [{ width: 768, height: 768 }] : false,
  ...(mode === 'overdue' ? { abortGraceMs: 30 } : {}),
});
if (mode === 'warm-up') {
  await client.run(plan(2), { onProgress: (step) => step === 1 && client.crashForDrill() }).catch((error: Error) => console.log(`run: ${error.name}`));
  // The restarted thread's shared words (a private field: this script is the fault's injector),
  // read until one of its warm-up's runs is inside ONNX Runtime.
  const inside = () => {
    const thread = (client as unknown as { thread?: { control: Int32Array } }).thread;
    return client.state === 'restarting' && thread !== undefined && Atomics.load(thread.control, IN_ONNX_RUNTIME_WORD) > 0;
  };
  while (!inside()) await new Promise((resolve) => setTimeout(resolve, 2));
  await client.close();
  console.log(`closed while ${client.state}`);
  console.log('done');
  process.exit(0);
}
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
