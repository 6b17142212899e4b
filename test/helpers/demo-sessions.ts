import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import type { GraphRole } from '../../src/pipeline/manifest.ts';
import { createSessions, type PipelineSessions } from '../../src/pipeline/sessions.ts';

/** The shipped manifest (the demo graphs). */
export const DEMO_MANIFEST = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));

/** Sessions on the demo graphs for pipeline tests: CPU, one thread, optionally only some optional roles. */
export async function demoSessions(roles?: readonly GraphRole[]): Promise<PipelineSessions> {
  return createSessions(await loadManifest(DEMO_MANIFEST), {
    executionProvider: { provider: 'cpu' },
    logger: pino({ level: 'silent' }),
    intraOpThreads: 1,
    ...(roles ? { roles } : {}),
  });
}
