/**
 * What the worker adds to a start-up error when a graph does not fit its role but is a known
 * export (docs/models.md §5): the exporter, the graph and the fix, from the matrix's contract.
 * Read only on that error path (it decodes the graph file; external weights are not read).
 *
 * A graph ONNX Runtime cannot load because an operator has no kernel on the provider gets its
 * own note: ONNX Runtime's SD optimizer writes fused operators with CUDA kernels only
 * (contracts/ort-optimizer.ts), and "Could not find an implementation for GroupNorm(1)" alone
 * does not say that the graph is for CUDA workers or which flags make a portable one.
 */
import type { GraphRole } from '../pipeline/manifest.ts';
import type { GraphFailure } from '../pipeline/sessions.ts';
import { matchContracts } from './contracts/index.ts';
import { CUDA_ONLY, cudaOnlyOps } from './contracts/ort-optimizer.ts';
import { readGraphFacts } from './graph-facts.ts';

/** SessionOptions.explainFailure for the worker and `qr-art models check`: the note that fits the failure, or ''. */
export async function explainGraphFailure(failure: GraphFailure): Promise<string> {
  if (failure.stage === 'role') return refusalNote(failure.file, failure.role);
  return isMissingKernel(failure.cause) ? missingKernelNote(failure.file, failure.role, failure.provider) : '';
}

/** ' — this is <exporter>'s <graph>: <how>' for a refused contract the file matches, else ''. */
export async function refusalNote(file: string, role: GraphRole): Promise<string> {
  try {
    const refused = matchContracts(await readGraphFacts(file, role)).find((c) => c.verdict === 'refuses' && !c.id.startsWith('ort-optimizer-'));
    return refused ? ` — this is ${refused.exporter}'s ${refused.graph} (export matrix: ${refused.id}): ${refused.how}` : '';
  } catch {
    return '';
  }
}

/** True for ONNX Runtime's session-creation error of an operator without a kernel on the provider. */
export const isMissingKernel = (message: string): boolean => /Could not find an implementation for|Failed to find kernel for/.test(message);

/**
 * For a graph whose session failed on a missing kernel: the CUDA-only fused operators it carries,
 * the matrix row, and the two fixes; '' when it carries none (another missing kernel: ONNX
 * Runtime's own message stands).
 */
export async function missingKernelNote(file: string, role: GraphRole, provider: string): Promise<string> {
  try {
    const facts = await readGraphFacts(file, role);
    const ops = cudaOnlyOps(facts);
    if (ops.length === 0) return '';
    const row = matchContracts(facts).find((c) => c.id.startsWith('ort-optimizer-'));
    const flags = ops.map((op) => CUDA_ONLY[`com.microsoft:${op}`]!).join(' ');
    return (
      ` — this graph was optimized by ONNX Runtime's optimize_pipeline${row ? ` (export matrix: ${row.id})` : ''}: its fused operators ${ops.join(', ')} (com.microsoft) have CUDA kernels only, none on ${provider}. ` +
      `Run this worker with EXECUTION_PROVIDER=cuda, or optimize the fp32 graph again with ${flags} (docs/models.md §2.6)`
    );
  } catch {
    return '';
  }
}
