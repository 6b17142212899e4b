/** How `qr-art predict` and `qr-art generate` tell whether an image scans, on one line. */
export function scanSummary(scannable: boolean | null, robustness: number | null): string {
  const verdict = scannable === null ? 'n/a' : scannable ? 'yes' : 'no';
  // The share of simulated phone photos read (by any decoder): how much margin the code has.
  if (robustness === null) return `scannable: ${verdict}`;
  const share = `${Math.round(robustness * 100)}% of test photos read`;
  // "no" beside a high share reads as a contradiction: the verdict also asks every decoder family to read nearly every photo on its own.
  return scannable === false && robustness >= 0.9 ? `scannable: ${verdict} (${share}, but not by every decoder family)` : `scannable: ${verdict} (${share})`;
}
