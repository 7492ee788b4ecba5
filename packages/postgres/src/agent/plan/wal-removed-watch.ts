/**
 * When has a replica's primary really lost the WAL it needs? postgres logs "requested WAL segment
 * … has already been removed" both when the slot was invalidated (streaming can never resume: only
 * a re-clone helps) and, briefly, while a new primary is promoting: the old timeline's last segment
 * is renamed to `.partial` before the new timeline's history is there to be asked for. A re-clone
 * of a healthy replica on the first such line throws away its data and minutes of work, so the
 * refusal must repeat: WAL_REMOVED_ATTEMPTS in a row over at least WAL_REMOVED_SPAN_MS, with no
 * stream between them that lasted STREAM_LASTED_MS. Pure: the agent feeds it postgres's log lines and the time.
 */

/** Refusals in a row before the WAL counts as gone. */
export const WAL_REMOVED_ATTEMPTS = 3;
/** The least time from the first to the last of them: a promotion is over well within it. */
export const WAL_REMOVED_SPAN_MS = 5_000;

/**
 * The WAL receiver logs "started streaming" before the primary's answer, so a refused attempt
 * logs both, a few ms apart. A stream counts as real only once it went this long unrefused.
 */
export const STREAM_LASTED_MS = 2_000;

const REFUSED = /requested WAL segment \S+ has already been removed/;
const STREAMING = /started streaming WAL from primary/;

/**
 * @example
 * ```ts
 * const watch = new WalRemovedWatch();
 * if (watch.see(line, performance.now())) retrySoon(); // the first refusal of a run
 * if (watch.confirmed) reclone(watch.confirmed);
 * ```
 */
export class WalRemovedWatch {
  #first: { readonly line: string; readonly atMs: number } | undefined;
  #count = 0;
  #confirmed: string | undefined;
  #streamedAtMs: number | undefined;

  /** The first refusal line, once enough refusals over enough time say the WAL is gone for good. */
  get confirmed(): string | undefined {
    return this.#confirmed;
  }

  /** Takes one postgres log line; true when it is the first refusal of a run (a quick retry may help). */
  see(line: string, nowMs: number): boolean {
    if (STREAMING.test(line)) {
      this.#streamedAtMs = nowMs;
      return false;
    }
    if (!REFUSED.test(line)) return false;
    // A stream that lasted proved the WAL was there after all: this refusal starts a new run.
    if (this.#streamedAtMs !== undefined && nowMs - this.#streamedAtMs >= STREAM_LASTED_MS) this.reset();
    this.#streamedAtMs = undefined;
    this.#count += 1;
    this.#first ??= { line, atMs: nowMs };
    if (this.#count >= WAL_REMOVED_ATTEMPTS && nowMs - this.#first.atMs >= WAL_REMOVED_SPAN_MS)
      this.#confirmed ??= this.#first.line;
    return this.#count === 1;
  }

  /** Forgets everything: a re-clone starts from a new copy. */
  reset(): void {
    this.#streamedAtMs = undefined;
    this.#first = undefined;
    this.#count = 0;
    this.#confirmed = undefined;
  }
}
