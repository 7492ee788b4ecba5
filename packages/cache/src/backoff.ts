/** Exponential backoff with full jitter, reset after a success. */

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
  readonly random?: () => number;
}

export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #random: () => number;
  #attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 250;
    this.#maxMs = options.maxMs ?? 30_000;
    this.#random = options.random ?? Math.random;
  }

  /** The next delay: grows ×2 per failure up to the cap; between half and all of it, so clients spread out. */
  next(): number {
    const ceiling = Math.min(this.#maxMs, this.#initialMs * 2 ** this.#attempt);
    this.#attempt++;
    return Math.round(ceiling / 2 + (ceiling / 2) * this.#random());
  }

  reset(): void {
    this.#attempt = 0;
  }
}
