import { describe, expect, it } from 'vitest';
import { scanSummary } from '../../src/cli/scan-summary.ts';

describe('scanSummary', () => {
  it('says the verdict with the share of test photos read, and why "no" can stand beside a high share', () => {
    expect(scanSummary(true, 1)).toBe('scannable: yes (100% of test photos read)');
    expect(scanSummary(false, 0.25)).toBe('scannable: no (25% of test photos read)');
    // Every photo read by some decoder, but a decoder family on its own read too few.
    expect(scanSummary(false, 1)).toBe('scannable: no (100% of test photos read, but not by every decoder family)');
    expect(scanSummary(null, null)).toBe('scannable: n/a');
  });
});
