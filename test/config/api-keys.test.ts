/**
 * API_KEYS (src/config.ts): userId:apiKey:credits entries, each key at least MIN_API_KEY_LENGTH
 * characters; a bad entry stops the service at start with a message that does not print the key.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, MIN_API_KEY_LENGTH, parseApiKeysSpec } from '../../src/config.ts';

const LONG = 'k'.repeat(MIN_API_KEY_LENGTH);

describe('parseApiKeysSpec', () => {
  it('reads each userId:apiKey:credits entry', () => {
    expect(parseApiKeysSpec(`ann:${LONG}:12.5, bo:${LONG}x:0`)).toEqual([
      { userId: 'ann', apiKey: LONG, credits: 12.5 },
      { userId: 'bo', apiKey: `${LONG}x`, credits: 0 },
    ]);
    expect(parseApiKeysSpec(undefined)).toEqual([]);
  });

  it('refuses a key shorter than the minimum, naming the user and not the key', () => {
    const short = LONG.slice(1);
    expect(() => parseApiKeysSpec(`ann:${short}:10`)).toThrow(ConfigError);
    expect(() => parseApiKeysSpec(`ann:${short}:10`)).toThrow(
      `API_KEYS entry for user "ann": the key has ${MIN_API_KEY_LENGTH - 1} characters; use at least ${MIN_API_KEY_LENGTH} (qr-art keys create mints a random one)`,
    );
  });

  it('refuses an entry that is not userId:apiKey:credits without printing the key', () => {
    expect(() => parseApiKeysSpec(`ann:${LONG}`)).not.toThrow();
    const error = (() => {
      try {
        parseApiKeysSpec(`ann:${LONG}:10:extra`);
      } catch (caught) {
        return caught as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.message).toContain('is not userId:apiKey:credits');
    expect(error!.message).not.toContain(LONG);
  });

  it('refuses more credits than an entry may grant (the database keeps cents in a bigint)', () => {
    expect(() => parseApiKeysSpec(`ann:${LONG}:1000000000001`)).toThrow(`API_KEYS entry for user "ann": its credits '1000000000001' must be at most 1000000000000 in one grant`);
    expect(parseApiKeysSpec(`ann:${LONG}:1000000000000`)[0]!.credits).toBe(1e12);
  });

  it('takes credits as `keys --credits` does: decimal, whole cents (0x10, 1e3, 1.005 and 0.004 granted 16, 1000, 1.00 and nothing unsaid)', () => {
    for (const credits of ['0x10', '1e3', '1.005', '0.004', '-1', 'ten', '']) {
      expect(() => parseApiKeysSpec(`ann:${LONG}:${credits}`), credits).toThrow(`API_KEYS entry for user "ann": its credits '${credits}' must be a non-negative number with at most two decimals`);
    }
    expect(parseApiKeysSpec(`ann:${LONG}:0.01`)[0]!.credits).toBe(0.01);
  });

  it('refuses a key no HTTP header can carry (a character beyond ASCII, a space), which could never authenticate', () => {
    for (const key of [`prix-en-euros-€€€-${LONG}`, `with space ${LONG}`]) {
      expect(() => parseApiKeysSpec(`ann:${key}:1`)).toThrow('API_KEYS entry for user "ann": the key may hold only visible ASCII characters (no spaces, no accents): an HTTP header could not carry it');
    }
  });

  it('is checked with the rest of the configuration, before a command starts anything', () => {
    expect(() => loadConfig({ API_KEYS: 'ann:short:10' })).toThrow(/API_KEYS entry for user "ann": the key has 5 characters/);
    expect(loadConfig({ API_KEYS: `ann:${LONG}:10` }).API_KEYS).toBe(`ann:${LONG}:10`);
  });
});
