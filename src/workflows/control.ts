/**
 * What a job's QR control image is, read from its workflow and normalized input: the canvas,
 * where the code goes, its pattern and the model's background and error-correction level.
 * v1-v3b bring their own code as an image URL instead. Outpainting has no control image.
 */
import type { Canvas, Placement } from '../qr/layout.ts';
import { placementFor } from '../qr/control-image.ts';
import { catalogue, isQrRepairMode, type QrCodePattern, type QrControlSettings, type QrRepairMode, type V5Model } from './catalogue.ts';
import type { WorkflowName } from './names.ts';
import { outputSize, type AspectRatio, type Resolution } from './sizes.ts';

export type ControlPlan =
  | ({ readonly kind: 'content'; readonly content: string; readonly canvas: Canvas; readonly placement: Placement; readonly pattern: QrCodePattern } & QrControlSettings)
  | { readonly kind: 'client-image'; readonly url: string; readonly canvas: Canvas }
  | { readonly kind: 'none' };

/** Whether the service draws the workflow's code from its content (a plan of kind 'content': the v4 and v5 families). */
export function drawsCode(workflow: WorkflowName): boolean {
  const { family } = catalogue[workflow];
  return family === 'qr-content' || family === 'qr-v5';
}

/** The input has passed parseCreateBody, so fields are present and in range. */
export function controlPlanFor(workflow: WorkflowName, input: Readonly<Record<string, unknown>>): ControlPlan {
  const entry = catalogue[workflow];
  switch (entry.family) {
    case 'qr-image':
      return { kind: 'client-image', url: String(input.qrImage), canvas: entry.control.canvas };
    case 'qr-content': {
      const { canvas, qrRatio, pattern, background, errorCorrectionLevel } = entry.control;
      return { kind: 'content', content: String(input.qrContent), canvas, placement: placementFor(canvas, qrRatio), pattern, background, errorCorrectionLevel };
    }
    case 'qr-v5': {
      const canvas = outputSize(input.aspectRatio as AspectRatio, input.resolution as Resolution);
      const placement = placementFor(canvas, input.qrRatio as number, input.qrX as number, input.qrY as number);
      const settings = entry.controlByModel[input.model as V5Model];
      return { kind: 'content', content: String(input.qrContent), canvas, placement, pattern: input.qrCodePartern as QrCodePattern, ...settings };
    }
    case 'outpainting':
      return { kind: 'none' };
  }
}

/**
 * The repair level of a job's images: the request's qrRepair, else the workflow's default in the
 * catalogue (on_failure for every QR workflow). Outpainting has no code: off. The
 * input has passed parseCreateBody; a stored input from before the field existed has none.
 */
export function repairModeFor(workflow: WorkflowName, input: Readonly<Record<string, unknown>>): QrRepairMode {
  const entry = catalogue[workflow];
  if (entry.family === 'outpainting') return 'off';
  return isQrRepairMode(input.qrRepair) ? input.qrRepair : entry.qrRepair;
}
