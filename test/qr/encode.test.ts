import { describe, expect, it } from 'vitest';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { alignmentCentres, encodeQr, maxCapacity, ModuleRole, QrContentTooLongError, type QrMatrix } from '../../src/qr/encode.ts';
import { LIMITS } from '../../src/workflows/catalogue.ts';
import { opencvDecode, zbarDecode } from '../helpers/independent-decoders.ts';

/** The plainest possible rendering (8 px squares, 4-module quiet zone), so only the matrix is under test. */
function plain(matrix: QrMatrix, scale = 8, quiet = 4): RawImage {
  const side = (matrix.size + 2 * quiet) * scale;
  const data = new Uint8Array(side * side).fill(255);
  for (let r = 0; r < matrix.size; r++) {
    for (let c = 0; c < matrix.size; c++) {
      if (!matrix.dark[r * matrix.size + c]) continue;
      for (let y = 0; y < scale; y++) {
        const o = ((quiet + r) * scale + y) * side + (quiet + c) * scale;
        data.fill(0, o, o + scale);
      }
    }
  }
  return rawImage(data, side, side, 1);
}

const at = (m: QrMatrix, r: number, c: number) => ({ dark: m.dark[r * m.size + c], role: m.role[r * m.size + c] });
const count = (m: QrMatrix, role: ModuleRole) => m.role.filter((v) => v === role).length;

describe('capacity limits (version 40)', () => {
  it.each([
    ['H', 'byte', 'a', 1273],
    ['L', 'byte', 'a', 2953],
    ['H', 'alphanumeric', 'A', 1852],
    ['L', 'alphanumeric', 'A', 4296],
    ['H', 'numeric', '7', 3057],
    ['L', 'numeric', '7', 7089],
  ] as const)('at level %s, %s content fits at exactly the limit and not one character more', (level, _mode, char, limit) => {
    const fits = encodeQr(char.repeat(limit), level);
    expect(fits.version).toBe(40);
    expect(fits.size).toBe(177);
    expect(() => encodeQr(char.repeat(limit + 1), level)).toThrow(QrContentTooLongError);
  });

  it('counts UTF-8 bytes, not characters: 424 euro signs (1272 bytes) fit at H, 425 (1275 bytes) do not', () => {
    expect(encodeQr('€'.repeat(424)).version).toBe(40);
    expect(() => encodeQr('€'.repeat(425))).toThrow(QrContentTooLongError);
  });

  it('says how long the content is, at which level, and the most a code can hold', () => {
    const error = (() => {
      try {
        encodeQr('a'.repeat(1274));
      } catch (e) {
        return e;
      }
      throw new Error('expected a QrContentTooLongError');
    })();
    expect(error).toBeInstanceOf(QrContentTooLongError);
    const tooLong = error as QrContentTooLongError;
    expect(tooLong.bytes).toBe(1274);
    expect(tooLong.errorCorrectionLevel).toBe('H');
    expect(tooLong.maxBytes).toBe(1273);
    expect(tooLong.message).toMatch(/1274 bytes/);
    expect(tooLong.message).toMatch(/level H/);
    expect(tooLong.message).toMatch(/version 40\) holds at most 1273 bytes/);
  });

  it('agrees with the capacities the API validates against', () => {
    expect(maxCapacity('H')).toEqual(LIMITS.qrCapacityAtH);
  });

  it('defaults to level H and rejects empty content', () => {
    expect(encodeQr('x').errorCorrectionLevel).toBe('H');
    expect(() => encodeQr('')).toThrow(RangeError);
  });
});

describe('content survives the round trip through decoders we did not write', () => {
  it.each([
    ['a link', 'https://example.com/qr-art?utm_source=test&x=1#top'],
    ['a phone number', 'tel:+14155550123'],
    ['an e-mail link', 'mailto:hello@example.org?subject=Hi%20there'],
    ['emoji', 'Hello 🎨🌊🦊 world'],
    ['CJK', '二维码アート 큐알코드'],
    ['accents', 'Crème brûlée à Zürich, ¿qué tal?'],
    ['digits only', '0123456789012345678901234567890'],
  ])('%s', async (_what, content) => {
    const image = plain(encodeQr(content));
    expect(await zbarDecode(image)).toEqual([content]);
    expect(await opencvDecode(image)).toEqual([content]);
  });
});

describe('module roles', () => {
  // 100 bytes at H need version 7 or more, the first versions with version information.
  const m = encodeQr('https://example.com/' + 'x'.repeat(80));

  it('is a version 7+ code for this test', () => {
    expect(m.version).toBeGreaterThanOrEqual(7);
    expect(m.size).toBe(17 + 4 * m.version);
  });

  it('marks the three finders with their separators, dark on the ring and pupil, light on the separator', () => {
    const s = m.size;
    for (const [r0, c0] of [[0, 0], [0, s - 7], [s - 7, 0]] as const) {
      for (let r = -1; r <= 7; r++) {
        for (let c = -1; c <= 7; c++) {
          const r1 = r0 + r, c1 = c0 + c;
          if (r1 < 0 || c1 < 0 || r1 >= s || c1 >= s) continue;
          expect(at(m, r1, c1).role).toBe(ModuleRole.Finder);
          const ring = r >= 0 && r <= 6 && c >= 0 && c <= 6 && (r === 0 || r === 6 || c === 0 || c === 6);
          const pupil = r >= 2 && r <= 4 && c >= 2 && c <= 4;
          expect(at(m, r1, c1).dark).toBe(ring || pupil ? 1 : 0);
        }
      }
    }
    expect(count(m, ModuleRole.Finder)).toBe(3 * 64);
  });

  it('marks row 6 and column 6 between the finders as alternating timing, dark on even indices', () => {
    for (let i = 8; i < m.size - 8; i++) {
      for (const [r, c] of [[6, i], [i, 6]] as const) {
        const cell = at(m, r, c);
        if (cell.role === ModuleRole.Alignment) continue; // alignment patterns sit on the timing lines from version 7
        expect(cell.role).toBe(ModuleRole.Timing);
        expect(cell.dark).toBe(i % 2 === 0 ? 1 : 0);
      }
    }
  });

  it('marks every 5x5 alignment pattern, dark centre and ring, light between', () => {
    const centres = alignmentCentres(m.version);
    const k = Math.floor(m.version / 7) + 2; // coordinates per axis (ISO 18004 Annex E)
    expect(centres).toHaveLength(k * k - 3);
    for (const [r, c] of centres) {
      for (let dr = -2; dr <= 2; dr++) {
        for (let dc = -2; dc <= 2; dc++) {
          const cell = at(m, r + dr, c + dc);
          expect(cell.role).toBe(ModuleRole.Alignment);
          expect(cell.dark).toBe(Math.max(Math.abs(dr), Math.abs(dc)) === 1 ? 0 : 1);
        }
      }
    }
    expect(count(m, ModuleRole.Alignment)).toBe(25 * centres.length);
  });

  it('marks 2 x 15 format bits plus the dark module, and 2 x 18 version bits', () => {
    expect(count(m, ModuleRole.Format)).toBe(31);
    expect(at(m, m.size - 8, 8)).toEqual({ dark: 1, role: ModuleRole.Format });
    expect(count(m, ModuleRole.Version)).toBe(36);
    expect(at(m, 0, m.size - 11).role).toBe(ModuleRole.Version);
    expect(at(m, m.size - 11, 0).role).toBe(ModuleRole.Version);
  });

  it.each([
    // version, byte capacity at L, data + EC codewords, remainder bits (ISO 18004 tables 1, 7 and 9)
    [1, 17, 26, 0],
    [2, 32, 44, 7],
    [7, 154, 196, 0],
    [14, 458, 581, 3],
  ])('leaves exactly the codeword modules as data at version %i', (version, bytes, codewords, remainder) => {
    const code = encodeQr('a'.repeat(bytes), 'L');
    expect(code.version).toBe(version);
    expect(encodeQr('a'.repeat(bytes + 1), 'L').version).toBe(version + 1);
    expect(count(code, ModuleRole.Data)).toBe(codewords * 8 + remainder);
  });
});
