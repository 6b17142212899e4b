/**
 * TRUST_PROXY (src/config.ts): whose X-Forwarded-For gives the client's address. Refused at
 * start when it is not a hop count or a list of proxy addresses, and never 'true'.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('TRUST_PROXY', () => {
  it('trusts no proxy by default', () => {
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
  });

  it('reads a hop count, or addresses, CIDR blocks and named ranges', () => {
    expect(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, fd00::/8,loopback, 192.0.2.7' }).TRUST_PROXY).toEqual(['10.0.0.0/8', 'fd00::/8', 'loopback', '192.0.2.7']);
  });

  it.each([['true'], ['10.0.0.0/33'], ['proxy.internal'], ['10.0.0.1/8/1']])('refuses %s, naming the variable', (value) => {
    expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(ConfigError);
    expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(/TRUST_PROXY/);
  });
});
