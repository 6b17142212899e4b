/**
 * Fault injection (a test hook, QR_ART_FAULT_INJECTION): makes the inference thread's session
 * runs fail the way a GPU does, so the worker's fault handling is exercised on a CPU machine.
 *
 *   spec   := rule ("," rule)*
 *   rule   := kind ":" role ":" n        the n-th run (1-based) of the graph playing `role` ("*": any)
 *   kind   := device   CUDA's illegal-address failure, from the n-th run on (a broken device stays broken)
 *           | oom      BFCArena's allocation failure, that run only
 *           | hang     the run blocks until the thread is terminated (a stalled kernel)
 *           | stuck    the run blocks in native code (opening a FIFO nobody writes to), where
 *                      terminating the thread cannot reach it; it ends with the process
 *
 * The messages are ONNX Runtime's own wording, so providers.ts classifies them as it would real
 * ones. Runs are counted after warm-up.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GraphRole } from './manifest.ts';
import { setRunHook } from './graph-session.ts';

export type FaultKind = 'device' | 'oom' | 'hang' | 'stuck';

export interface FaultRule {
  readonly kind: FaultKind;
  readonly role: GraphRole | '*';
  readonly nth: number;
}

export const DEVICE_FAULT_MESSAGE =
  'CUDA failure 700: an illegal memory access was encountered ; GPU=0 ; hostname=fault-injection ; file=cuda_call.cc ; line=0 ; expr=cudaStreamSynchronize(stream);';
export const OUT_OF_MEMORY_MESSAGE =
  "Non-zero status code returned while running Conv node. Name:'fault-injection' Status Message: bfc_arena.cc:376 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 5368709120";

export function parseFaultSpec(spec: string): FaultRule[] {
  return spec
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean)
    .map((rule) => {
      const [kind, role, n] = rule.split(':');
      const nth = Number(n);
      if (!['device', 'oom', 'hang', 'stuck'].includes(kind!) || !role || !Number.isInteger(nth) || nth < 1) {
        throw new Error(`fault injection rule '${rule}' is not kind:role:n (kind device|oom|hang|stuck, n >= 1)`);
      }
      return { kind: kind as FaultKind, role: role as GraphRole | '*', nth };
    });
}

/** Installs the rules on every GraphSession.run of this thread. */
export function installFaults(rules: readonly FaultRule[]): void {
  const counts = new Map<string, number>();
  setRunHook(async (graph, run) => {
    const seen = new Set<string>();
    for (const key of [graph.role, '*']) {
      if (seen.has(key)) continue;
      seen.add(key);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    for (const rule of rules) {
      if (rule.role !== '*' && rule.role !== graph.role) continue;
      const n = counts.get(rule.role)!;
      if (rule.kind === 'device' && n >= rule.nth) throw new Error(DEVICE_FAULT_MESSAGE);
      if (n !== rule.nth) continue;
      if (rule.kind === 'oom') throw new Error(OUT_OF_MEMORY_MESSAGE);
      if (rule.kind === 'hang') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
      if (rule.kind === 'stuck') blockInNativeCode();
    }
    return run();
  });
}

/** Blocks this thread in a system call for good: open(2) on a FIFO waits for a writer that never comes. */
function blockInNativeCode(): void {
  const fifo = join(mkdtempSync(join(tmpdir(), 'qrart-stuck-')), 'fifo');
  execFileSync('mkfifo', [fifo]);
  openSync(fifo, 'r');
}
