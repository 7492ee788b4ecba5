/**
 * When to try a failed volume operation again: after 2 s, then twice as long each time, at most a
 * minute. The provisioner's own status writes wake it at once, so without this a failure that
 * repeats would retry (and write an Event) as fast as the API server answers. Pure: times are given.
 */
export class RetryBackoff {
  readonly #first: number;
  readonly #max: number;
  readonly #next = new Map<string, { readonly at: number; readonly delay: number }>();

  constructor(firstMs = 2_000, maxMs = 60_000) {
    this.#first = firstMs;
    this.#max = maxMs;
  }

  /** True while `key` failed and its next try is not due at `now`. */
  waiting(key: string, now: number): boolean {
    const next = this.#next.get(key);
    return next !== undefined && now < next.at;
  }

  /** Records a failure of `key` at `now`; returns how long until it may be tried again. */
  failed(key: string, now: number): number {
    const previous = this.#next.get(key);
    const delay = previous ? Math.min(previous.delay * 2, this.#max) : this.#first;
    this.#next.set(key, { at: now + delay, delay });
    return delay;
  }

  /** Forgets `key`'s failures: the next one waits the first delay again. */
  succeeded(key: string): void {
    this.#next.delete(key);
  }
}
