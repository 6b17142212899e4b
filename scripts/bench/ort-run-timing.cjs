/**
 * Preload for the worker bench (node --require): in worker threads, wraps ONNX Runtime's
 * InferenceSession.prototype.run and reports every call's start/end (absolute ms, comparable
 * across threads), the graph it ran (from its input names) and the thread's V8 heap, on the
 * BroadcastChannel 'qr-art-ort-run-timing'. The main thread only listens (worker.ts).
 * Costs one structured-clone message per session.run.
 */
'use strict';
const { isMainThread, BroadcastChannel } = require('node:worker_threads');

if (!isMainThread) {
  const v8 = require('node:v8');
  const ort = require('onnxruntime-node');
  const channel = new BroadcastChannel('qr-art-ort-run-timing');
  channel.unref();
  const proto = ort.InferenceSession.prototype;
  const run = proto.run;
  const graphOf = (names) => {
    if (names.includes('input_ids')) return 'text_encoder';
    if (names.includes('controlnet_cond')) return 'controlnet';
    if (names.includes('latent_sample')) return 'vae_decoder';
    if (names.includes('clip_input')) return 'safety_checker';
    if (names.includes('sample') && names.some((n) => n.includes('residual'))) return 'unet';
    if (names.includes('sample')) return 'vae_encoder';
    return names.join(',');
  };
  proto.run = async function (...args) {
    const start = performance.timeOrigin + performance.now();
    try {
      return await run.apply(this, args);
    } finally {
      const end = performance.timeOrigin + performance.now();
      channel.postMessage({ start, end, graph: graphOf(this.inputNames ?? []), heapUsed: v8.getHeapStatistics().used_heap_size });
    }
  };
}
