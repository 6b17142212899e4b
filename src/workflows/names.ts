/**
 * Workflow names accepted in the `workflow` field of a create request (spec section 9).
 * The order is the spec's version order; `outpainting` comes last.
 */
export const QR_WORKFLOWS = [
  'generate_qr_art',
  'generate_qr_art_v1.1',
  'generate_qr_art_v2',
  'generate_qr_art_v3a',
  'generate_qr_art_v3b',
  'generate_qr_art_v4',
  'generate_qr_art_v4s',
  'generate_qr_art_v4real',
  'generate_qr_art_v4niji',
  'generate_qr_art_v4dream',
  'generate_qr_art_v5',
  'generate_qr_art_v5s',
] as const;

export const WORKFLOWS = [...QR_WORKFLOWS, 'outpainting'] as const;

export type QrWorkflowName = (typeof QR_WORKFLOWS)[number];
export type WorkflowName = (typeof WORKFLOWS)[number];

export function isWorkflowName(s: unknown): s is WorkflowName {
  return typeof s === 'string' && (WORKFLOWS as readonly string[]).includes(s);
}
