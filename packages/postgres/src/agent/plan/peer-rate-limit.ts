/**
 * How much of the peer API one caller may use: a token bucket per remote address. Peers ask a few
 * times per second at most (once per retry period and decision); a flood beyond the burst is
 * answered 429 at once, before it reaches postgres. Pure: the clock is passed in.
 */

export interface RateLimit {
  /** Requests per second, sustained. */
  readonly perSecond: number;
  /** Requests at once after a quiet spell. */
  readonly burst: number;
}

/** Generous for peers (two or three decisions a second during a failover), tight for a flood. */
export const PEER_RATE_LIMIT: RateLimit = { perSecond: 20, burst: 40 };

/** Remote addresses remembered at most; a flood from many addresses forgets the quietest first. */
const MAX_CALLERS = 1024;

/**
 * @example
 * ```ts
 * const limiter = new PeerRateLimiter();
 * if (!limiter.take(request.socket.remoteAddress ?? '', performance.now())) answer(429, 'slow down\n');
 * ```
 */
export class PeerRateLimiter {
  readonly #limit: RateLimit;
  readonly #buckets = new Map<string, { tokens: number; atMs: number }>();

  constructor(limit: RateLimit = PEER_RATE_LIMIT) {
    this.#limit = limit;
  }

  /** True when `caller` may make a request at `nowMs` (and it is counted). */
  take(caller: string, nowMs: number): boolean {
    const bucket = this.#buckets.get(caller);
    const refilled = bucket
      ? Math.min(this.#limit.burst, bucket.tokens + ((nowMs - bucket.atMs) / 1000) * this.#limit.perSecond)
      : this.#limit.burst;
    const allowed = refilled >= 1;
    // Re-inserted, so the map's order is least recently seen first.
    this.#buckets.delete(caller);
    this.#buckets.set(caller, { tokens: allowed ? refilled - 1 : refilled, atMs: nowMs });
    if (this.#buckets.size > MAX_CALLERS) this.#buckets.delete(this.#buckets.keys().next().value as string);
    return allowed;
  }
}
