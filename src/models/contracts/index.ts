/**
 * Every export contract of the matrix (docs/models.md §5), gathered from the exporter families'
 * files, and the matching of a graph's (or tokenizer folder's) facts against them. A family
 * file adds one import and one spread line here.
 */
import type { ExportContract, ExportFacts } from './contract.ts';
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
import { ROWS as VIT_GPT2 } from './vit-gpt2.ts';

export type { ExportContract, ExportFacts, GraphFacts, TokenizerFacts, Verdict } from './contract.ts';

export const CONTRACTS: readonly ExportContract[] = checkedIds([
  ...QR_ART,
  ...OPTIMUM,
  ...DIFFUSERS,
  ...VIT_GPT2,
  ...NSFW,
  ...FACE,
  ...LCM,
  ...TOKENIZERS,
  ...ORT_OPTIMIZER,
  ...INPAINT,
  ...SEAMS,
]);

function checkedIds(rows: ExportContract[]): ExportContract[] {
  const seen = new Set<string>();
  for (const r of rows) {
    if (seen.has(r.id)) throw new Error(`export contract id '${r.id}' is used twice`);
    if (r.verdict === 'refuses' && !r.refusal) throw new Error(`export contract '${r.id}' refuses but gives no refusal fragment`);
    seen.add(r.id);
  }
  return rows;
}

/** The contracts of the facts' role that these facts match (usually one; none for an export the matrix does not know). */
export function matchContracts(facts: ExportFacts, contracts: readonly ExportContract[] = CONTRACTS): ExportContract[] {
  return contracts.filter((c) => c.role === facts.role && c.matches(facts));
}
