/** How `qr-art predict` and `qr-art generate` tell whether an image scans, on one line. */
export function scanSummary(scannable: boolean | null, robustness: number | null): string {
  const verdict = scannable === null ? 'n/a' : scannable ? 'yes' : 'no';
  // The share of simulated phone photos read: how much margin the code has.
  return robustness === null ? `scannable: ${verdict}` : `scannable: ${verdict} (${Math.round(robustness * 100)}% of test photos read)`;
}
