/**
 * When should a following replica make postgres ask its primary again before
 * wal_retrieve_retry_interval has passed? Some refusals last only moments after a failover: the new
 * primary makes the replica's slot just after its promotion ("replication slot … does not exist"),
 * and renames the old timeline's last segment to `.partial` before the new timeline's history is
 * there ("requested WAL segment … has already been removed", see wal-removed-watch.ts). Each such
 * refusal costs the replica a second without WAL, a second in which asynchronous commits live on
 * the new primary alone. A reload wakes postgres's startup process out of that wait, so the agent
 * reloads shortly after such a refusal; at most QUICK_RETRIES times in QUICK_RETRY_WINDOW_MS, so a
 * refusal that lasts falls back to postgres's own interval. Pure: the clock is passed in.
 */

/** A new primary refused the replica's slot: it makes it a moment after its promotion. */
const SLOT_MISSING = /could not start WAL streaming: ERROR: +replication slot "[^"]+" does not exist/;

/** Quick retries at most in one window. */
export const QUICK_RETRIES = 3;
/** The window the quick retries are counted in. */
export const QUICK_RETRY_WINDOW_MS = 10_000;

/**
 * @example
 * ```ts
 * const retry = new QuickRetry();
 * if (retry.wanted(line, walRemoved.see(line, now), now)) setTimeout(reload, 100);
 * ```
 */
export class QuickRetry {
  readonly #askedAtMs: number[] = [];

  /**
   * Takes one postgres log line (and whether it was a first "WAL removed" refusal); true when a
   * reload should follow it.
   */
  wanted(line: string, walRemovedFirst: boolean, nowMs: number): boolean {
    if (!walRemovedFirst && !SLOT_MISSING.test(line)) return false;
    while (this.#askedAtMs.length > 0 && nowMs - (this.#askedAtMs[0] ?? 0) >= QUICK_RETRY_WINDOW_MS)
      this.#askedAtMs.shift();
    if (this.#askedAtMs.length >= QUICK_RETRIES) return false;
    this.#askedAtMs.push(nowMs);
    return true;
  }
}
