/**
 * Counts, per value, how often a followed request (an annotation's value) was withdrawn: seen,
 * then gone or replaced by another. The primary records a switchover request it served on the
 * Lease and serves the same value again only once that value was withdrawn in between; counts
 * taken when that record was current tell whether it still is, even when the withdrawal came and
 * went between two of the primary's loops (the operator clears the annotation, the user sets the
 * same value again). A value appearing is not a withdrawal, nor is another value going: a cache
 * that lagged behind a request the Lease says was served is catching up, not asking again.
 */
export class Withdrawals {
  #value: string | undefined;
  readonly #counts = new Map<string, number>();

  /** The value as the follower now has it (undefined: no request). */
  see(value: string | undefined): void {
    if (this.#value !== undefined && value !== this.#value)
      this.#counts.set(this.#value, (this.#counts.get(this.#value) ?? 0) + 1);
    this.#value = value;
  }

  /** How often `value` was withdrawn so far. */
  of(value: string): number {
    return this.#counts.get(value) ?? 0;
  }

  /** The counts as they are now, to compare with later. */
  snapshot(): ReadonlyMap<string, number> {
    return new Map(this.#counts);
  }
}
