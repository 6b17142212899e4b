/**
 * Deadlines scale with the work: an outpainting's with the area it paints (its canvas, up to
 * maxPixels), not only with the model's native square.
 */
import { describe, expect, it } from 'vitest';
import { loadManifest, resolveOutpainting } from '../../src/pipeline/manifest.ts';
import { DEFAULT_MANIFEST_PATH } from '../../src/worker/inference-client.ts';
import { deadlineFor } from '../../src/worker/deadline.ts';
import { outpaintDeadline } from '../../src/worker/outpaint-job.ts';

describe('outpainting deadlines', () => {
  it('grow with the painted area up to maxPixels, and never fall below the native square’s', async () => {
    const demo = await loadManifest(DEFAULT_MANIFEST_PATH);
    const native = resolveOutpainting(demo).model.nativeSize;
    // The demo paints at most its native area (no maxPixels): an operator's may paint 9 times that.
    const manifest = { ...demo, workflows: { ...demo.workflows, outpainting: { ...demo.workflows.outpainting!, maxPixels: 9 * native * native } } };
    const { settings } = resolveOutpainting(manifest);
    const steps = settings.steps;
    const at = (side: number) => deadlineFor({ steps, batchSize: 1, width: side, height: side }, native);

    expect(outpaintDeadline(manifest, 'one_shot', { width: 64, height: 64 })).toBe(at(native));
    const big = { width: 2 * native, height: 2 * native };
    expect(outpaintDeadline(manifest, 'one_shot', big)).toBe(at(2 * native));
    expect(outpaintDeadline(manifest, 'one_shot', big)).toBeGreaterThan(at(native));
    // Past maxPixels the canvas is painted scaled down: the deadline stops growing there.
    expect(outpaintDeadline(manifest, 'one_shot', { width: 8000, height: 8000 })).toBe(at(3 * native));
    expect(outpaintDeadline(demo, 'one_shot', big)).toBe(at(native));
    // multi_shots: every pass's steps.
    expect(outpaintDeadline(manifest, 'multi_shots', { width: 64, height: 64 })).toBe(deadlineFor({ steps: settings.multiShots.steps * settings.multiShots.maxPasses, batchSize: 1, width: native, height: native }, native));
    // A fixed JOB_TIMEOUT_MS wins.
    expect(outpaintDeadline(manifest, 'one_shot', big, { fixedMs: 1234 })).toBe(1234);
  });
});
