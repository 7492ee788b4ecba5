/**
 * A pause that can be cut short: a periodic loop waits on it between laps, and whoever sees a
 * change (a watch event, a new spec) wakes it, so the loop acts at once rather than at its next tick.
 *
 * Guarantees: a wake-up that arrives while nobody waits is kept for the next `wait`, so a change
 * seen during a lap is never lost. Caveat: one waiter at a time.
 */

/**
 * @example
 * ```ts
 * import { Wakeup } from '@kanri/timing';
 *
 * const wakeup = new Wakeup();
 * setTimeout(() => wakeup.wake(), 100);
 * const woken = await wakeup.wait(2_000, signal); // true after ~100 ms
 * ```
 */
export class Wakeup {
  #pending = false;
  #resolve: ((woken: boolean) => void) | undefined;

  /** Ends the current wait (or the next one, if none is in progress). */
  wake(): void {
    const resolve = this.#resolve;
    if (resolve) resolve(true);
    else this.#pending = true;
  }

  /** Resolves true when woken, false after `ms` or when `signal` aborts. Never rejects. */
  wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const finish = (woken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#resolve = undefined;
        resolve(woken);
      };
      const onAbort = () => finish(false);
      const timer = setTimeout(() => finish(false), Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#resolve = finish;
    });
  }
}

/**
 * Sleeps `ms`, ending early (without rejecting) when `signal` aborts.
 *
 * @example
 * ```ts
 * await sleepUnlessAborted(retryPeriodMs, signal);
 * if (signal.aborted) return;
 * ```
 */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Wakeup().wait(ms, signal).then(() => undefined);
}
