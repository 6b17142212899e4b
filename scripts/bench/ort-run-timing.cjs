/**
 * Preload for the worker bench (node --require): in the inference thread, wraps ONNX Runtime's
 * InferenceSession.prototype.run and records every call's start/end (absolute ms, comparable
 * across threads), the graph it ran (from its input and output names), the bytes it moved across
 * the JavaScript/ONNX Runtime boundary (every input and output tensor held in host memory; a
 * tensor that stays on the device, location 'gpu-buffer', moves none) and the thread's V8 heap;
 * it also records the thread's garbage-collection pauses. Records are buffered in the thread and sent
 * on the BroadcastChannel 'qr-art-ort-run-timing' only when the main thread asks ('flush'),
 * so measuring adds no message per run to the job being measured.
 */
'use strict';
const { BroadcastChannel, workerData } = require('node:worker_threads');

// Only the inference thread (its workerData role, inference-client.ts): other threads, such as
// the loader-hooks thread tsx runs in, must not answer flushes.
if (workerData && workerData.role === 'qr-art-inference') {
  const v8 = require('node:v8');
  const { PerformanceObserver } = require('node:perf_hooks');
  const ort = require('onnxruntime-node');
  const channel = new BroadcastChannel('qr-art-ort-run-timing');
  channel.unref();
  let runs = [];
  let gcs = [];
  channel.onmessage = (event) => {
    if (event.data !== 'flush') return;
    channel.postMessage({ runs, gcs });
    runs = [];
    gcs = [];
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: performance.timeOrigin + e.startTime, ms: e.duration });
  }).observe({ entryTypes: ['gc'] });
  const proto = ort.InferenceSession.prototype;
  const run = proto.run;
  const graphOf = (names, outputs) => {
    if (outputs.includes('noise_pred')) return 'denoiser';
    if (outputs.includes('x_next')) return 'sampler step (device)';
    if (names.length === 1 && names[0] === 'x') return 'device copy';
    if (names.includes('input_ids')) return 'text_encoder';
    if (names.includes('controlnet_cond')) return 'controlnet';
    if (names.includes('latent_sample')) return 'vae_decoder';
    if (names.includes('clip_input')) return 'safety_checker';
    if (names.includes('sample') && names.some((n) => n.includes('residual'))) return 'unet';
    if (names.includes('sample')) return 'vae_encoder';
    return names.join(',');
  };
  const hostBytes = (tensors) =>
    Object.values(tensors ?? {}).reduce((sum, t) => sum + (t && t.location === 'cpu' && t.data && t.data.byteLength ? t.data.byteLength : 0), 0);
  proto.run = async function (...args) {
    const start = performance.timeOrigin + performance.now();
    let out;
    try {
      out = await run.apply(this, args);
      return out;
    } finally {
      const end = performance.timeOrigin + performance.now();
      const bytes = hostBytes(args[0]) + hostBytes(out);
      runs.push({ start, end, graph: graphOf(this.inputNames ?? [], this.outputNames ?? []), bytes, heapUsed: v8.getHeapStatistics().used_heap_size });
    }
  };
}
