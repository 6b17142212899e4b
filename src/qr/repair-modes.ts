/**
 * Values of qrRepair: what the worker does to an output image a phone might not read
 * (docs/scan-repair.md). off: deliver as generated, isScanables only reports; on_failure: repair
 * the misread modules of an image that fails the family verdict; always: repair every image.
 * Plain data, so the API's catalogue lists them without loading the decoders.
 */
export const QR_REPAIR_MODES = ['off', 'on_failure', 'always'] as const;
export type QrRepairMode = (typeof QR_REPAIR_MODES)[number];

export function isQrRepairMode(value: unknown): value is QrRepairMode {
  return typeof value === 'string' && (QR_REPAIR_MODES as readonly string[]).includes(value);
}
