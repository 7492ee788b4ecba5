/** A periodic loop's pause that another part of the agent can cut short ("something changed, look now"). */
export class Wakeup {
  #pending = false;
  #wake: (() => void) | undefined;

  /** Ends the current (or the next) wait early. */
  wake(): void {
    if (this.#wake) this.#wake();
    else this.#pending = true;
  }

  /** Resolves after `ms`, on `wake()`, or when `signal` aborts, whichever is first. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#pending || signal.aborted) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }
}
