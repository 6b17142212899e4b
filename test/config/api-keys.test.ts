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
        parseApiKeysSpec(`ann:${LONG}:ten`);
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
    expect(() => parseApiKeysSpec(`ann:${LONG}:1e20`)).toThrow(/is not userId:apiKey:credits/);
    expect(parseApiKeysSpec(`ann:${LONG}:1000000000000`)[0]!.credits).toBe(1e12);
  });

  it('is checked with the rest of the configuration, before a command starts anything', () => {
    expect(() => loadConfig({ API_KEYS: 'ann:short:10' })).toThrow(/API_KEYS entry for user "ann": the key has 5 characters/);
    expect(loadConfig({ API_KEYS: `ann:${LONG}:10` }).API_KEYS).toBe(`ann:${LONG}:10`);
  });
});
