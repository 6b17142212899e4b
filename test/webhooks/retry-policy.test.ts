import { describe, expect, it } from 'vitest';
import {
  DEFAULT_WEBHOOK_SCHEDULE_MS,
  nextDelayMs,
  parseRetryAfterMs,
  parseScheduleMs,
} from '../../src/webhooks/retry-policy.ts';

const fixed = (v: number) => () => v;
const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe('DEFAULT_WEBHOOK_SCHEDULE_MS', () => {
  it('is 5s, 30s, 2m, 5m, 30m, 2h, 5h, 10h', () => {
    expect(DEFAULT_WEBHOOK_SCHEDULE_MS).toEqual([5 * S, 30 * S, 2 * M, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H]);
  });
});

describe('nextDelayMs', () => {
  const schedule = [1000, 2000, 4000];
  const now = Date.parse('2025-01-01T00:00:00Z');

  it.each([
    // attempt, random, retry-after, expected
    [1, 0.5, undefined, 1000],
    [2, 0.5, undefined, 2000],
    [3, 0.5, undefined, 4000],
    [4, 0.5, undefined, null],
    [10, 0.5, undefined, null],
    [1, 0, undefined, 800], // -20 %
    [1, 0.999999999, undefined, 1200], // +20 %
    [2, 0.25, undefined, 1800], // -10 %
    [3, 0.75, undefined, 4400], // +10 %
    [1, 0.5, null, 1000],
    [1, 0.5, '', 1000],
    [1, 0.5, 'soon', 1000],
    [1, 0.5, '0', 1000], // shorter than schedule: schedule wins
    [1, 0.5, '3', 3000], // longer: Retry-After wins
    [2, 0.5, ' 5 ', 5000],
    [1, 0.5, '3600', 8000], // capped at max(schedule) * 2
    [3, 1, '3600', 8000],
    [1, 0.5, 'Wed, 01 Jan 2025 00:00:06 GMT', 6000], // HTTP date
    [1, 0.5, 'Tue, 31 Dec 2024 23:00:00 GMT', 1000], // date in the past
    [1, 0.5, 'Thu, 02 Jan 2025 00:00:00 GMT', 8000], // far future date: capped
    [4, 0.5, '3', null], // exhausted: Retry-After does not extend the schedule
  ] as const)('attempt %d random %d retry-after %j -> %j', (attempt, r, ra, expected) => {
    expect(nextDelayMs(attempt, schedule, ra, fixed(r), now)).toBe(expected);
  });

  it('uses the default schedule and gives up after 8 failures', () => {
    const delays = Array.from({ length: 9 }, (_, i) => nextDelayMs(i + 1, DEFAULT_WEBHOOK_SCHEDULE_MS, null, fixed(0.5)));
    expect(delays).toEqual([...DEFAULT_WEBHOOK_SCHEDULE_MS, null]);
  });

  it('keeps jitter within ±20 % with the real random', () => {
    for (let i = 0; i < 200; i++) {
      const d = nextDelayMs(1, [10_000], null) as number;
      expect(d).toBeGreaterThanOrEqual(8000);
      expect(d).toBeLessThanOrEqual(12_000);
    }
  });

  it('returns null for an empty schedule and rejects bad attempts', () => {
    expect(nextDelayMs(1, [], null, fixed(0.5))).toBeNull();
    expect(() => nextDelayMs(0, schedule)).toThrow(RangeError);
    expect(() => nextDelayMs(1.5, schedule)).toThrow(RangeError);
  });
});

describe('parseRetryAfterMs', () => {
  it('parses seconds and dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfterMs('120', now)).toBe(120_000);
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfterMs('-5', now)).toBeNull();
    expect(parseRetryAfterMs('1.5', now)).toBeNull();
    expect(parseRetryAfterMs(undefined, now)).toBeNull();
  });
});

describe('parseScheduleMs', () => {
  it.each([
    ['100,200,400', [100, 200, 400]],
    [' 100 , 200 ', [100, 200]],
    ['5s,30s,2m,1h', [5000, 30_000, 120_000, 3_600_000]],
    ['250ms,1.5s', [250, 1500]],
    ['0', [0]],
  ])('%j -> %j', (text, expected) => {
    expect(parseScheduleMs(text)).toEqual(expected);
  });

  it.each(['', '100,,200', 'abc', '-5', '5d', '1e3', '100;200'])('rejects %j', (text) => {
    expect(() => parseScheduleMs(text)).toThrow();
  });
});
