/**
 * The face detectors' export-matrix rows (src/models/contracts/face.ts), fixture by fixture
 * (scripts/demo-models/exports/face.ts): UltraFace RFB-320 and RFB-640 pass `qr-art models check`
 * (matched, one detection run) and enhance=face finds and refines the test pattern's face through
 * them; the YOLOv8-face layout is refused at start with its message.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ROWS } from '../../scripts/demo-models/exports/face.ts';
import { facePattern } from '../../scripts/demo-models/face-pattern.ts';
import { checkManifest } from '../../src/cli/models-check.ts';
import { enhanceFaces, findFaceSquares } from '../../src/pipeline/face-pass.ts';
import { loadManifest } from '../../src/pipeline/manifest.ts';
import { createSessions } from '../../src/pipeline/sessions.ts';
import { placementFor, renderControlImage } from '../../src/qr/control-image.ts';

describe('face detector export rows', () => {
  for (const row of ROWS) {
    const c = row.contract;
    it(`${c.id} ${c.verdict === 'refuses' ? 'is refused at start' : 'is served, and enhance=face refines the pattern face through it'}`, async () => {
      const manifest = await row.build(await mkdtemp(join(tmpdir(), `qrart-${c.id}-`)));
      const result = await checkManifest(manifest, { provider: 'cpu' }, 1);
      if (c.verdict === 'refuses') {
        expect(result.error).toContain(c.refusal!);
        return;
      }
      expect(result.error).toBeUndefined();
      const detector = result.rows.find((r) => r.role === 'face_detector');
      expect(detector?.contracts.map((x) => x.id)).toEqual([c.id]);
      expect(detector?.ms).toBeDefined();

      const sessions = await createSessions(await loadManifest(manifest), {
        executionProvider: { provider: 'cpu' },
        logger: pino({ level: 'silent' }),
        intraOpThreads: 1,
        roles: ['vae_encoder', 'face_detector'],
      });
      try {
        const target = sessions.forWorkflow('generate_qr_art_v5', 'universal');
        const image = facePattern(160, 120, [{ cx: 60, cy: 60, d: 44 }]);
        const squares = await findFaceSquares([image], target);
        expect(squares[0]).toHaveLength(1);
        const canvas = { width: 160, height: 120 };
        const control = renderControlImage({ content: 'F', pattern: 's1', canvas, placement: placementFor(canvas, 0.9), background: 'gray', errorCorrectionLevel: 'H' }).image;
        const request = { prompt: 'a face', seed: 1, batchSize: 1, steps: 4, guidance: 2, scheduler: 'dpmpp_2m_karras', control, controlScale: 1, controlStart: 0, controlEnd: 1, width: 160, height: 120, nativeSize: 128, refine: false } as const;
        const [out] = await enhanceFaces([image], squares, request, target, { tick: () => undefined });
        expect(Buffer.from(out!.data).equals(Buffer.from(image.data))).toBe(false);
      } finally {
        await sessions.release();
      }
    }, 60_000);
  }
});
