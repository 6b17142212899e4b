/**
 * Warm-up runs the model's NSFW checker, whichever kind its manifest names: SD's safety checker,
 * OnnxStack's content filter, or an image classifier (each through its own preprocessing), so the
 * first job does not pay for that graph's first run either.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/nsfw.ts';
import { setRunObserver } from '../../src/pipeline/graph-session.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions } from '../../src/pipeline/sessions.ts';
import { warmUp } from '../../src/pipeline/warm-up.ts';

const quiet = pino({ level: 'silent' });
const dirs: string[] = [];
afterAll(async () => {
  setRunObserver(undefined);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe.each([
  ['diffusers-safety-checker', 'safety_checker'],
  ['onnxstack-content-filter', 'content_filter'],
  ['optimum-vit-nsfw-classifier', 'nsfw_classifier'],
] as const)('warm-up with the %s row', (id, role) => {
  it(`runs the ${role} graph once`, async () => {
    const dir = await mkdtemp(join(tmpdir(), `qrart-warm-${id}-`));
    dirs.push(dir);
    const manifest = await loadManifest(await ROWS.find((r) => r.contract.id === id)!.build(dir));
    const sessions = await createSessions(manifest, { executionProvider: { provider: 'cpu' }, logger: quiet, intraOpThreads: 1, roles: [role] });
    const ran: string[] = [];
    setRunObserver((graph) => ran.push(graph.role));
    try {
      await warmUp(sessions, [{ width: 64, height: 64 }], quiet);
    } finally {
      setRunObserver(undefined);
      await sessions.release();
    }
    expect(ran.filter((r) => r === role)).toHaveLength(1);
  }, 30_000);
});
