/**
 * Every export-matrix fixture, gathered from the exporter families' files: exactly one per
 * contract of src/models/contracts (checked here, so a contract without a fixture fails the
 * matrix test at import). A family file adds one import and one spread line here.
 */
import { CONTRACTS } from '../../../src/models/contracts/index.ts';
import { ROWS as DIFFUSERS } from './diffusers.ts';
import { ROWS as FACE } from './face.ts';
import { ROWS as INPAINT } from './inpaint.ts';
import { ROWS as LCM } from './lcm.ts';
import { ROWS as TOKENIZERS } from './tokenizers.ts';
import { ROWS as NSFW } from './nsfw.ts';
import { ROWS as OPTIMUM } from './optimum.ts';
import { ROWS as ORT_OPTIMIZER } from './ort-optimizer.ts';
import { ROWS as QR_ART } from './qr-art.ts';
import { ROWS as SEAMS } from './seams.ts';
import type { ExportRow } from './row.ts';
import { ROWS as VIT_GPT2 } from './vit-gpt2.ts';

export type { Exercise, ExportRow } from './row.ts';

export const FIXTURES: readonly ExportRow[] = [
  ...QR_ART,
  ...OPTIMUM,
  ...DIFFUSERS,
  ...VIT_GPT2,
  ...NSFW,
  ...FACE,
  ...LCM,
  ...TOKENIZERS,
  ...SEAMS,
  ...ORT_OPTIMIZER,
  ...INPAINT,
];

/** Contract ids without a fixture, and fixtures of ids no contract has or that two fixtures share. */
export function fixtureCoverage(rows: readonly ExportRow[] = FIXTURES): { missing: string[]; unknown: string[]; duplicated: string[] } {
  const ids = rows.map((r) => r.contract.id);
  const known = new Set(CONTRACTS.map((c) => c.id));
  return {
    missing: CONTRACTS.map((c) => c.id).filter((id) => !ids.includes(id)),
    unknown: ids.filter((id) => !known.has(id)),
    duplicated: ids.filter((id, i) => ids.indexOf(id) !== i),
  };
}
