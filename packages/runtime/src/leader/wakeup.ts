/**
 * A sleep that can be cut short: the campaign loop waits on it between attempts, and the Lease
 * watch wakes it the moment the Lease is released, so hand-over does not wait for the next poll.
 */

/**
 * A wake-up that arrives while nobody is waiting is kept for the next `wait`, so a release seen
 * during an attempt is not lost. One waiter at a time: the campaign loop is the only one.
 *
 * @example
 * ```ts
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
  wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    if (signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const finish = (woken: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#resolve = undefined;
        resolve(woken);
      };
      const onAbort = () => finish(false);
      const timer = setTimeout(() => finish(false), Math.max(0, ms));
      signal.addEventListener('abort', onAbort, { once: true });
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
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Wakeup().wait(ms, signal).then(() => undefined);
}
