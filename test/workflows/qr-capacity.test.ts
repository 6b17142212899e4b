import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { fitsInQrCode } from '../../src/workflows/schemas.ts';
import { expectIssue, expectOk, parse, V4_FAMILY, V5_FAMILY, withField } from './helpers.ts';

const encodesAtH = (text: string) => {
  try {
    QRCode.create(text, { errorCorrectionLevel: 'H' });
    return true;
  } catch {
    return false;
  }
};

/** Largest n such that unit.repeat(n) encodes at level H, found by bisection with the qrcode package itself. */
function capacity(unit: string): number {
  let lo = 0;
  let hi = 8000;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (encodesAtH(unit.repeat(mid))) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

describe('qrContent must fit a QR code at error-correction level H', () => {
  const limits: Array<[string, string, number]> = [
    ['numeric', '7', 3057],
    ['alphanumeric', 'Z', 1852],
    ['byte (ASCII)', 'z', 1273],
    ['byte (2-byte UTF-8)', 'é', 636],
  ];

  it.each(limits)('finds the %s limit with the qrcode package', (_mode, unit, limit) => {
    expect(capacity(unit)).toBe(limit);
  });

  it.each(limits)('accepts %s content exactly at the limit and rejects one character more', (_mode, unit, limit) => {
    for (const workflow of [...V4_FAMILY, ...V5_FAMILY]) {
      expect(expectOk(parse(withField(workflow, 'qrContent', unit.repeat(limit)))).input.qrContent).toHaveLength(limit);
      const issue = expectIssue(parse(withField(workflow, 'qrContent', unit.repeat(limit + 1))), 'qrContent', 'qr_capacity');
      expect(issue.message).toContain('error-correction level H');
    }
  });

  it('rejects very long content without running the encoder for minutes', () => {
    const started = Date.now();
    expectIssue(parse(withField('generate_qr_art_v4', 'qrContent', '1'.repeat(1_000_000))), 'qrContent', 'qr_capacity');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('accepts typical contents', () => {
    for (const text of ['https://example.com/a?b=c', 'tel:+15551234567', 'mailto:a@example.com', 'WIFI:S:home;T:WPA;P:secret;;', 'こんにちは', ' ']) {
      expect(fitsInQrCode(text)).toEqual({ ok: true });
    }
  });

  it('rejects content the encoder cannot represent (a lone surrogate) under the characters rule, not as too long', () => {
    for (const text of ['a\ud800b', '\ud800', '\udc00x']) {
      const issue = expectIssue(parse(withField('generate_qr_art_v5', 'qrContent', text)), 'qrContent', 'characters');
      expect(issue.message).toContain('unpaired UTF-16 surrogate');
      expect(issue.message).not.toContain('does not fit');
    }
  });

  it('rejects content that starts with a byte-order mark, which most decoders drop (a scan could never match)', () => {
    for (const workflow of [...V4_FAMILY, ...V5_FAMILY]) {
      const issue = expectIssue(parse(withField(workflow, 'qrContent', '\uFEFFhttps://example.com')), 'qrContent', 'characters');
      expect(issue.message).toContain('U+FEFF');
    }
    // Inside the text it is an ordinary character that every decoder returns.
    expect(expectOk(parse(withField('generate_qr_art_v5', 'qrContent', 'a\uFEFFb'))).input.qrContent).toBe('a\uFEFFb');
  });
});
