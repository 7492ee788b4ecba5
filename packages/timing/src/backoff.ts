/**
 * The one exponential backoff of Kanri: every retry loop (watches, the work queue's per-item
 * limiter, the agent's API and clone retries, testenv's crash-loop restarts) uses it, so one rule
 * decides how fast a failing loop slows down.
 *
 * Guarantees: the n-th delay (from 0) is at most `min(maxMs, initialMs × factor^n)`; with jitter
 * `j` it is at least `(1 − j)` of that. `reset()` after a success starts again from `initialMs`.
 * Caveat: one `Backoff` per loop; it is not safe to share between loops that fail independently.
 */

export interface BackoffOptions {
  /** The first delay (before jitter). Default 250 ms. */
  readonly initialMs?: number;
  /** The cap (before jitter). Default 30 s. */
  readonly maxMs?: number;
  /** Growth per failure. Default 2. */
  readonly factor?: number;
  /**
   * The share of each delay that is random, from 0 (none) to 1 (full jitter). Default 0.5: each
   * delay lies between half and all of its ceiling, so clients that failed together spread out.
   */
  readonly jitter?: number;
  /** Source of randomness in [0, 1); tests pass a fixed one. */
  readonly random?: () => number;
}

/**
 * The ceiling for failure number `attempt` (0-based), before jitter. Pure.
 *
 * @example
 * ```ts
 * backoffCeiling(3, { initialMs: 100, maxMs: 1_000 }); // 800
 * ```
 */
export function backoffCeiling(attempt: number, options: BackoffOptions = {}): number {
  const initialMs = options.initialMs ?? 250;
  const maxMs = options.maxMs ?? 30_000;
  const factor = options.factor ?? 2;
  // Capping the exponent keeps a loop that failed for days from overflowing to Infinity × 0.
  return Math.min(maxMs, initialMs * factor ** Math.min(Math.max(0, attempt), 64));
}

/**
 * The delay for failure number `attempt` (0-based): its ceiling with the jitter applied. Pure when
 * `options.random` is; for loops that count their own attempts (a request's retries), where a
 * {@link Backoff} object would only hold that count.
 *
 * @example
 * ```ts
 * backoffDelay(2, { initialMs: 100, maxMs: 5_000, jitter: 0.2 }); // between 320 and 400
 * ```
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const jitter = options.jitter ?? 0.5;
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`jitter must be within [0, 1], not ${jitter}`);
  const random = options.random ?? Math.random;
  return Math.round(backoffCeiling(attempt, options) * (1 - jitter + jitter * random()));
}

/**
 * Exponential backoff with jitter, reset after a success.
 *
 * @example
 * ```ts
 * import { Backoff } from '@kanri/timing';
 *
 * const backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
 * while (!signal.aborted) {
 *   try {
 *     await work();
 *     backoff.reset();
 *   } catch {
 *     if (!(await backoff.wait(signal))) break; // aborted
 *   }
 * }
 * ```
 */
export class Backoff {
  readonly #options: BackoffOptions;
  #attempt = 0;

  constructor(options: BackoffOptions = {}) {
    const jitter = options.jitter ?? 0.5;
    if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`jitter must be within [0, 1], not ${jitter}`);
    this.#options = options;
  }

  /** Failures since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The next delay, and counts one more failure. */
  next(): number {
    const delay = backoffDelay(this.#attempt, this.#options);
    this.#attempt++;
    return delay;
  }

  /** After a success: the next failure waits `initialMs` again. */
  reset(): void {
    this.#attempt = 0;
  }

  /** Sleeps the next delay; resolves false if `signal` aborted (at once, or during the sleep). Never rejects. */
  async wait(signal?: AbortSignal): Promise<boolean> {
    const ms = this.next();
    if (signal?.aborted) return false;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    });
    return !signal?.aborted;
  }
}
