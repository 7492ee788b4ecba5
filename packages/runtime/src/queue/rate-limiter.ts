/**
 * Retry rate limiters for the work queue: how long a failed key waits before its next attempt,
 * modelled on client-go's workqueue rate limiters, with controller-runtime's default.
 *
 * Pure: no timers and no I/O; a limiter only computes delays, the queue schedules them.
 * Caveats: per-key limiters remember every key that failed until `forget(key)` is called, so a
 * caller must forget a key once it succeeds (or is deleted), as controller-runtime does.
 */
import { backoffCeiling } from '@kanri/timing';

/**
 * Decides how long a key waits before it is retried.
 *
 * @example
 * ```ts
 * const limiter = exponentialFailureRateLimiter<string>(5, 60_000);
 * limiter.when('default/web'); // 5
 * limiter.when('default/web'); // 10
 * limiter.forget('default/web'); // the reconcile succeeded
 * ```
 */
export interface RateLimiter<K> {
  /** Records a failure of `key` and returns the delay in milliseconds before its next retry. */
  when(key: K): number;
  /** Clears what is remembered about `key`, so its next failure starts from the smallest delay. */
  forget(key: K): void;
  /** How many failures of `key` are recorded. */
  retries(key: K): number;
}

function assertNonNegative(name: string, value: number): void {
  if (!(value >= 0)) throw new RangeError(`${name} must be a non-negative number, got ${value}`);
}

/**
 * Per-key exponential backoff, like client-go's ItemExponentialFailureRateLimiter: the nth failure
 * of a key (counting from 0) waits `baseMs * 2^n`, capped at `maxMs`.
 *
 * @example
 * ```ts
 * const limiter = exponentialFailureRateLimiter<string>(5, 1_000);
 * [1, 2, 3].map(() => limiter.when('a')); // [5, 10, 20]
 * limiter.retries('a'); // 3
 * ```
 */
export function exponentialFailureRateLimiter<K>(baseMs = 5, maxMs = 1_000_000): RateLimiter<K> {
  assertNonNegative('baseMs', baseMs);
  assertNonNegative('maxMs', maxMs);
  const failures = new Map<K, number>();
  return {
    when(key) {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      // No jitter, as client-go: the queue spreads retries with the shared bucket limiter instead.
      return backoffCeiling(n, { initialMs: baseMs, maxMs, factor: 2 });
    },
    forget(key) {
      failures.delete(key);
    },
    retries(key) {
      return failures.get(key) ?? 0;
    },
  };
}

/**
 * One token bucket for all keys, like client-go's BucketRateLimiter over golang.org/x/time/rate:
 * the bucket holds `burst` tokens and refills at `qps` tokens per second. `when()` reserves a
 * token and returns how long until it is available: 0 while the burst lasts, then one token per
 * `1000 / qps` ms. It limits the overall retry rate, so it neither counts nor forgets keys.
 *
 * @param now - a monotonic clock in milliseconds; injectable for tests.
 *
 * @example
 * ```ts
 * const limiter = bucketRateLimiter<string>(10, 2);
 * [limiter.when('a'), limiter.when('b'), limiter.when('c'), limiter.when('d')]; // ≈ [0, 0, 100, 200]
 * ```
 */
export function bucketRateLimiter<K>(
  qps = 10,
  burst = 100,
  now: () => number = () => performance.now(),
): RateLimiter<K> {
  if (!(qps > 0)) throw new RangeError(`qps must be positive, got ${qps}`);
  if (!(burst >= 1)) throw new RangeError(`burst must be at least 1, got ${burst}`);
  let tokens = burst;
  let last = now();
  return {
    when() {
      if (qps === Number.POSITIVE_INFINITY) return 0;
      const t = now();
      // A clock that steps back must not mint tokens (nor take them away).
      tokens = Math.min(burst, tokens + (Math.max(0, t - last) * qps) / 1000);
      last = Math.max(last, t);
      // Reserving may drive the balance negative: later reservations queue behind this one.
      tokens -= 1;
      return tokens >= 0 ? 0 : (-tokens * 1000) / qps;
    },
    forget() {},
    retries() {
      return 0;
    },
  };
}

/**
 * Combines limiters: the delay is the longest of theirs, `retries` the largest, and `forget`
 * reaches all of them (client-go's MaxOfRateLimiter).
 *
 * @example
 * ```ts
 * const limiter = maxOfRateLimiter(exponentialFailureRateLimiter<string>(), bucketRateLimiter<string>(1, 1));
 * ```
 */
export function maxOfRateLimiter<K>(...limiters: readonly RateLimiter<K>[]): RateLimiter<K> {
  return {
    when(key) {
      // Every limiter must see the failure (each keeps its own state), so no short-circuiting.
      let delay = 0;
      for (const limiter of limiters) delay = Math.max(delay, limiter.when(key));
      return delay;
    },
    forget(key) {
      for (const limiter of limiters) limiter.forget(key);
    },
    retries(key) {
      let retries = 0;
      for (const limiter of limiters) retries = Math.max(retries, limiter.retries(key));
      return retries;
    },
  };
}

/**
 * controller-runtime's default: per-key exponential backoff from 5 ms to 1000 s, and at most
 * 10 retries per second overall after a burst of 100.
 *
 * @example
 * ```ts
 * const queue = new WorkQueue({ rateLimiter: defaultControllerRateLimiter() });
 * ```
 */
export function defaultControllerRateLimiter<K>(): RateLimiter<K> {
  return maxOfRateLimiter<K>(exponentialFailureRateLimiter<K>(5, 1_000_000), bucketRateLimiter<K>(10, 100));
}
