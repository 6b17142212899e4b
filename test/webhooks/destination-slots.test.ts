import { describe, expect, it } from 'vitest';
import { createDestinationSlots, createThrottledNotice, deferralDelayMs, destinationOf } from '../../src/webhooks/destination-slots.ts';

describe('destinationOf', () => {
  it('is the scheme, host and port, whatever the path, query or case', () => {
    expect(destinationOf('https://Hooks.Example.com/a?x=1')).toBe('https://hooks.example.com');
    expect(destinationOf('https://hooks.example.com:443/b')).toBe('https://hooks.example.com');
    expect(destinationOf('https://hooks.example.com:8443/a')).toBe('https://hooks.example.com:8443');
    expect(destinationOf('http://hooks.example.com/a')).toBe('http://hooks.example.com');
    expect(destinationOf('http://127.0.0.1:9000/x')).toBe('http://127.0.0.1:9000');
  });
  it('keeps other schemes apart instead of lumping them under the origin "null"', () => {
    expect(destinationOf('ftp://a.example/x')).toBe('ftp://a.example');
    expect(destinationOf('ftp://b.example/x')).not.toBe(destinationOf('ftp://a.example/x'));
  });
  it('uses an unparseable URL as its own destination', () => {
    expect(destinationOf('not a url')).toBe('not a url');
  });
});

describe('createDestinationSlots', () => {
  it('lets each destination have its limit in flight, independently of the others', () => {
    const slots = createDestinationSlots(2);
    const a1 = slots.tryAcquire('a');
    const a2 = slots.tryAcquire('a');
    expect(a1).not.toBeNull();
    expect(a2).not.toBeNull();
    expect(slots.tryAcquire('a')).toBeNull();
    expect(slots.tryAcquire('b')).not.toBeNull();
    expect(slots.inFlight('a')).toBe(2);
    expect(slots.total).toBe(3);
    a1!();
    a1!(); // giving back twice frees one slot only
    expect(slots.inFlight('a')).toBe(1);
    expect(slots.total).toBe(2);
    expect(slots.tryAcquire('a')).not.toBeNull();
    expect(slots.tryAcquire('a')).toBeNull();
  });
  it('refuses a limit below 1', () => {
    expect(() => createDestinationSlots(0)).toThrow(RangeError);
  });
});

describe('deferralDelayMs', () => {
  const middle = () => 0.5;
  it('starts at 0.25 s and doubles per redelivery up to 5 s', () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((count) => deferralDelayMs(count, middle))).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
  });
  it('jitters by ±20 %', () => {
    expect(deferralDelayMs(1, () => 0)).toBe(200);
    expect(deferralDelayMs(1, () => 0.999999)).toBe(300);
    expect(deferralDelayMs(10, () => 0)).toBe(4000);
  });
});

describe('createThrottledNotice', () => {
  it('says to log at most once per interval per key, with the count since the last line', () => {
    let now = 0;
    const notice = createThrottledNotice(1000, () => now);
    expect(notice('a')).toBe(1);
    expect(notice('a')).toBeNull();
    expect(notice('a')).toBeNull();
    expect(notice('b')).toBe(1);
    now = 1000;
    expect(notice('a')).toBe(3);
    now = 5000;
    expect(notice('b')).toBe(1);
  });
});
