import { describe, expect, it } from 'vitest';
import type { JobMessage } from '../../src/messages/schemas.ts';
import QRCode from 'qrcode';
import { ensureScannable } from '../../src/qr/guarantee.ts';
import { clientControlImage, ControlImageRunner } from '../../src/worker/control-image-runner.ts';
import { serveFiles } from '../helpers/file-server.ts';
import { parseCreateBody } from '../../src/workflows/validate.ts';

function v4sJob(content: string): JobMessage {
  const parsed = parseCreateBody({ workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: content }, { allowPrivateUrls: false });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const { workflow, input, imageCount } = parsed.value;
  return { id: 'control-image-test', userId: 'tester', workflow, input, imageCount, createdAt: new Date().toISOString() };
}

describe('the control-image runner', () => {
  const hooks = { signal: new AbortController().signal };

  it('judges the control image with the capture family by default', async () => {
    const outcome = await new ControlImageRunner({ policy: { allowPrivate: false } }).run(v4sJob('https://example.com/a'), hooks);
    expect(outcome.kind).toBe('images');
    if (outcome.kind !== 'images') return;
    expect(outcome.images).toHaveLength(1);
    expect(outcome.images[0]).toMatchObject({ extension: 'png', isScannable: true, scanRobustness: 1 });
  }, 30_000);

  it('leaves the verdict out when told to (the scaling bench), still drawing the same PNG', async () => {
    const job = v4sJob('https://example.com/b');
    const judged = await new ControlImageRunner({ policy: { allowPrivate: false } }).run(job, hooks);
    const unjudged = await new ControlImageRunner({ policy: { allowPrivate: false }, scanVerdict: false }).run(job, hooks);
    if (judged.kind !== 'images' || unjudged.kind !== 'images') throw new Error('no images');
    expect(unjudged.images[0]!.isScannable).toBeUndefined();
    expect(unjudged.images[0]!.scanRobustness).toBeUndefined();
    expect(Buffer.from(unjudged.images[0]!.data).equals(Buffer.from(judged.images[0]!.data))).toBe(true);
  }, 30_000);
});

describe('a client code drawn at one pixel a module (qrcode at scale 1)', () => {
  it('is located and placed crisply, and its plain control image scans', async () => {
    const text = 'https://example.com/menu?table=12';
    const files = await serveFiles({ '/tiny.png': await QRCode.toBuffer(text, { errorCorrectionLevel: 'H', scale: 1, margin: 4 }) });
    try {
      const control = await clientControlImage(`${files.url}/tiny.png`, { width: 768, height: 768 }, { policy: { allowPrivate: true } }, new AbortController().signal);
      expect(control.expected).toBe(text);
      expect(control.clientCode).toMatchObject({ located: true, misdrawnModules: 0 });
      const verdict = await ensureScannable(control.image, control.expected, control.geometry, 'off', { codeSide: control.codeSide });
      expect(verdict.scannable).toBe(true);
    } finally {
      await files.close();
    }
  }, 30_000);
});
