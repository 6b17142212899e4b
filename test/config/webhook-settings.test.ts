/**
 * WEBHOOK_SECRET and WEBHOOK_RETRY_SCHEDULE_MS (src/config.ts) are checked with every other
 * setting, so a bad one stops any command at start with the configuration's message, not
 * `serve` after it has connected, with a stack trace.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('the webhook settings', () => {
  it('reads a Standard Webhooks secret and a retry schedule in ms, s, m or h', () => {
    const config = loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_RETRY_SCHEDULE_MS: '500, 5s,2m,1h' });
    expect(config.WEBHOOK_SECRET).toBe(SECRET);
    expect(config.WEBHOOK_RETRY_SCHEDULE_MS).toEqual([500, 5000, 120_000, 3_600_000]);
  });

  it.each([
    ['WEBHOOK_SECRET', 'not-a-secret', /WEBHOOK_SECRET: webhook secret must have the form whsec_/],
    ['WEBHOOK_SECRET', 'whsec_c2hvcnQ=', /WEBHOOK_SECRET: webhook secret key must be/],
    ['WEBHOOK_RETRY_SCHEDULE_MS', '5x,30s', /WEBHOOK_RETRY_SCHEDULE_MS: invalid retry schedule entry "5x"/],
  ])('refuses %s=%s with the reason', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});
