/**
 * Counts how often a followed request (an annotation's value) was withdrawn: a value seen, then
 * gone or replaced by another. The primary records a switchover request it served on the Lease
 * and serves the same value again only once the request was withdrawn in between; a count taken
 * when that record was current tells whether it still is, even when the withdrawal came and went
 * between two of the primary's loops (the operator clears the annotation, the user sets the same
 * value again). A value appearing where there was none is not a withdrawal: a cache that lagged
 * behind a request the Lease says was served is catching up, not asking again.
 */
export class Withdrawals {
  #value: string | undefined;
  #count = 0;

  /** The value as the follower now has it (undefined: no request). */
  see(value: string | undefined): void {
    if (this.#value !== undefined && value !== this.#value) this.#count++;
    this.#value = value;
  }

  /** Withdrawals seen so far. */
  get count(): number {
    return this.#count;
  }
}
