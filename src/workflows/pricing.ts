/**
 * What a prediction costs, from its workflow's cost rule (catalogue.ts, where every price is)
 * and the input fields pricing looks at. Integer cents throughout: hundredths of a credit, no
 * floating-point money until the record's `credits`.
 */
import type { EnhanceValue, OutpaintingType, WorkflowEntry } from './catalogue.ts';
import type { Resolution } from './sizes.ts';

/** The subset of a normalized input that pricing looks at. */
export interface CostInput {
  readonly batchSize?: number;
  readonly resolution?: Resolution;
  readonly enhance?: EnhanceValue;
  readonly type?: OutpaintingType;
}

/** Price of one image in integer cents (before batchSize). */
export function perImageCostCents(entry: WorkflowEntry, input: CostInput): number {
  const cost = entry.cost;
  switch (cost.kind) {
    case 'flat':
      return cost.cents;
    case 'per_image':
      return cost.centsPerImage;
    case 'per_image_by_resolution': {
      const resolution = input.resolution ?? (entry.family === 'qr-v5' ? entry.enumDefaults.resolution : 'SD');
      const percent = cost.resolutionFactorPercent[resolution];
      // Integer arithmetic; .5 of a cent rounds up (e.g. 299 x 150% = 448.5 -> 449).
      const base = Math.floor((cost.centsPerImage * percent + 50) / 100);
      return base + (input.enhance === 'face' ? cost.enhanceFaceCentsPerImage : 0);
    }
    case 'by_type':
      return cost.cents[input.type ?? 'one_shot'];
  }
}

/** Number of images a prediction produces: batchSize where the workflow has it, else 1. */
export function imageCountFor(entry: WorkflowEntry, input: CostInput): number {
  if (entry.family === 'qr-content' || entry.family === 'qr-v5') return input.batchSize ?? entry.params.batchSize.default;
  return 1;
}

/** Total price of a prediction in integer cents (hundredths of a credit). */
export function costCentsFor(entry: WorkflowEntry, input: CostInput): number {
  return perImageCostCents(entry, input) * imageCountFor(entry, input);
}

/** Credits as a number for the record's `credits` field (249 -> 2.49). */
export function centsToCredits(cents: number): number {
  return cents / 100;
}
