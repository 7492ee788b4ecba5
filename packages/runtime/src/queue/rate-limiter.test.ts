import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bucketRateLimiter,
  defaultControllerRateLimiter,
  exponentialFailureRateLimiter,
  maxOfRateLimiter,
  type RateLimiter,
} from './rate-limiter.js';

function fakeClock(start = 1_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('exponentialFailureRateLimiter', () => {
  it('doubles the delay with each failure of a key, from the base', () => {
    const limiter = exponentialFailureRateLimiter<string>(5, 1_000_000);
    assert.deepEqual(
      Array.from({ length: 6 }, () => limiter.when('a')),
      [5, 10, 20, 40, 80, 160],
    );
    assert.equal(limiter.retries('a'), 6);
  });

  it('keeps each key on its own schedule', () => {
    const limiter = exponentialFailureRateLimiter<string>(5, 1_000_000);
    limiter.when('a');
    limiter.when('a');
    assert.equal(limiter.when('b'), 5);
    assert.equal(limiter.when('a'), 20);
    assert.equal(limiter.retries('b'), 1);
    assert.equal(limiter.retries('unknown'), 0);
  });

  it('caps the delay, even after enough failures to overflow 2^n', () => {
    const limiter = exponentialFailureRateLimiter<string>(5, 100);
    assert.deepEqual(
      Array.from({ length: 7 }, () => limiter.when('a')),
      [5, 10, 20, 40, 80, 100, 100],
    );
    for (let i = 0; i < 2_000; i++) limiter.when('a');
    assert.equal(limiter.when('a'), 100);
    const zero = exponentialFailureRateLimiter<string>(0, 100);
    for (let i = 0; i < 2_000; i++) zero.when('a');
    assert.equal(zero.when('a'), 0);
  });

  it('starts over from the base after forget', () => {
    const limiter = exponentialFailureRateLimiter<string>(5, 1_000);
    limiter.when('a');
    limiter.when('a');
    limiter.forget('a');
    assert.equal(limiter.retries('a'), 0);
    assert.equal(limiter.when('a'), 5);
  });

  it('defaults to 5 ms and rejects negative bounds', () => {
    assert.equal(exponentialFailureRateLimiter<string>().when('a'), 5);
    assert.throws(() => exponentialFailureRateLimiter<string>(-1), RangeError);
    assert.throws(() => exponentialFailureRateLimiter<string>(5, Number.NaN), RangeError);
  });
});

describe('bucketRateLimiter', () => {
  it('lets a burst through, then spaces reservations 1/qps apart, for all keys together', () => {
    const clock = fakeClock();
    const limiter = bucketRateLimiter<string>(10, 3, clock.now);
    assert.deepEqual(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((key) => limiter.when(key)),
      [0, 0, 0, 100, 200, 300],
    );
  });

  it('refills at qps tokens per second, up to the burst', () => {
    const clock = fakeClock();
    const limiter = bucketRateLimiter<string>(10, 3, clock.now);
    for (let i = 0; i < 5; i++) limiter.when('a'); // two tokens owed
    clock.advance(150); // 1.5 tokens back: still half a token owed
    assert.equal(limiter.when('a'), 150);
    clock.advance(60_000); // far more than the burst
    assert.deepEqual(
      [1, 2, 3, 4].map(() => limiter.when('a')),
      [0, 0, 0, 100],
    );
  });

  it('ignores a clock that steps back', () => {
    const clock = fakeClock();
    const limiter = bucketRateLimiter<string>(10, 1, clock.now);
    assert.equal(limiter.when('a'), 0);
    clock.advance(-5_000);
    assert.equal(limiter.when('a'), 100);
  });

  it('neither counts nor remembers keys, and rejects an empty bucket', () => {
    const limiter = bucketRateLimiter<string>(10, 1, fakeClock().now);
    limiter.when('a');
    assert.equal(limiter.retries('a'), 0);
    limiter.forget('a');
    assert.equal(limiter.when('a'), 100);
    assert.throws(() => bucketRateLimiter<string>(0), RangeError);
    assert.throws(() => bucketRateLimiter<string>(10, 0), RangeError);
    assert.equal(bucketRateLimiter<string>(Number.POSITIVE_INFINITY, 1).when('a'), 0);
  });
});

describe('maxOfRateLimiter', () => {
  function recording(delay: number, retries: number): RateLimiter<string> & { calls: string[] } {
    const calls: string[] = [];
    return {
      calls,
      when: (key) => {
        calls.push(`when ${key}`);
        return delay;
      },
      forget: (key) => {
        calls.push(`forget ${key}`);
      },
      retries: () => retries,
    };
  }

  it('waits for the longest delay and reports the most retries, asking every limiter', () => {
    const a = recording(30, 1);
    const b = recording(70, 4);
    const c = recording(10, 2);
    const limiter = maxOfRateLimiter(a, b, c);
    assert.equal(limiter.when('k'), 70);
    assert.equal(limiter.retries('k'), 4);
    limiter.forget('k');
    for (const one of [a, b, c]) assert.deepEqual(one.calls, ['when k', 'forget k']);
  });

  it('with no limiters never delays', () => {
    assert.equal(maxOfRateLimiter<string>().when('k'), 0);
    assert.equal(maxOfRateLimiter<string>().retries('k'), 0);
  });
});

describe('defaultControllerRateLimiter', () => {
  it('backs off per key from 5 ms, doubling', () => {
    const limiter = defaultControllerRateLimiter<string>();
    assert.deepEqual(
      [1, 2, 3, 4].map(() => limiter.when('a')),
      [5, 10, 20, 40],
    );
    assert.equal(limiter.retries('a'), 4);
    limiter.forget('a');
    assert.equal(limiter.retries('a'), 0);
  });

  it('limits all keys together to 10 per second after a burst of 100', () => {
    const limiter = defaultControllerRateLimiter<string>();
    const start = performance.now();
    const delays = Array.from({ length: 102 }, (_, i) => limiter.when(`key-${i}`));
    // Real clock: the bucket refills by 1 ms of delay per ms that passed during the calls.
    const slack = performance.now() - start;
    assert.ok(
      delays.slice(0, 100).every((d) => d === 5),
      'the burst only sees the 5 ms backoff',
    );
    const [d101 = 0, d102 = 0] = delays.slice(100);
    assert.ok(d101 >= 100 - slack && d101 <= 100, `101st delay ${d101} (slack ${slack} ms)`);
    assert.ok(d102 >= 200 - slack && d102 <= 200, `102nd delay ${d102} (slack ${slack} ms)`);
  });
});
