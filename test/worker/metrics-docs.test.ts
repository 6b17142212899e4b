/**
 * docs/metrics.md names every value of qrart_worker_onnx_run_seconds' `role` label that
 * /metrics can show: the manifest's graph roles (each with a series from the start) and `other`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkerMetrics } from '../../src/worker/metrics.ts';

const DOC = readFileSync(path.resolve(import.meta.dirname, '../../docs/metrics.md'), 'utf8');

describe('the onnx run metric and its docs', () => {
  it('documents every role label value the worker exports, and other', async () => {
    const exported = await new WorkerMetrics().registry.getSingleMetricAsString('qrart_worker_onnx_run_seconds');
    const roles = new Set([...exported.matchAll(/role="([^"]+)"/g)].map((match) => match[1]!));
    roles.add('other');
    const paragraph = DOC.slice(DOC.indexOf('- `role` is'), DOC.indexOf('warm-up runs are not counted'));
    const documented = new Set([...paragraph.matchAll(/`([a-z0-9_]+)`/g)].map((match) => match[1]!).filter((name) => name !== 'role'));
    expect([...documented].sort()).toEqual([...roles].sort());
  });
});
