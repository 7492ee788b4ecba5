/**
 * The watchdog's rules, pure: the keeper feeds it the agent's messages and its own timer, and does
 * what the steps say. Times are on one monotonic clock (protocol.ts `monotonicMs`).
 *
 * Guarantees: a postmaster may run as primary only up to the last deadline the agent fed; past it
 * the step says to stop it, and the watchdog stays `fired`, refusing every start, until the agent
 * either feeds a deadline still ahead (a leadership renewed or newly won) or disarms (it no longer
 * leads, so a postmaster it starts will be a standby). A deadline that has already passed when it
 * arrives (a renewal answered after the agent was stalled past its deadline) fires at once.
 */

export type WatchdogState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'armed'; readonly untilMs: number }
  | { readonly kind: 'fired'; readonly atMs: number };

export interface WatchdogStep {
  readonly state: WatchdogState;
  /** Set the timer to this many ms from now (0: check at once); undefined: no timer. */
  readonly checkInMs?: number;
  /** Stop the postmaster now; `lateMs` is how far past the deadline. */
  readonly fire?: { readonly lateMs: number };
}

export const IDLE: WatchdogState = { kind: 'idle' };

/**
 * The agent fed a deadline.
 *
 * @example
 * ```ts
 * feedWatchdog(IDLE, 10_500, 10_000); // { state: { kind: 'armed', untilMs: 10_500 }, checkInMs: 500 }
 * ```
 */
export function feedWatchdog(state: WatchdogState, untilMs: number, nowMs: number): WatchdogStep {
  if (untilMs > nowMs) return { state: { kind: 'armed', untilMs }, checkInMs: untilMs - nowMs };
  // Late food is no food: the leadership it proves ended already.
  if (state.kind === 'fired') return { state };
  return { state: { kind: 'fired', atMs: nowMs }, fire: { lateMs: nowMs - untilMs } };
}

/** The agent no longer leads (or stops cleanly, postgres stopped first). */
export function disarmWatchdog(): WatchdogStep {
  return { state: IDLE };
}

/**
 * The timer went off. Timers may fire a little early, and a later feed may have moved the deadline
 * on; only a deadline that has really passed fires.
 *
 * @example
 * ```ts
 * checkWatchdog({ kind: 'armed', untilMs: 10_500 }, 10_501); // fires, lateMs 1
 * ```
 */
export function checkWatchdog(state: WatchdogState, nowMs: number): WatchdogStep {
  if (state.kind !== 'armed') return { state };
  if (nowMs < state.untilMs) return { state, checkInMs: state.untilMs - nowMs };
  return { state: { kind: 'fired', atMs: nowMs }, fire: { lateMs: nowMs - state.untilMs } };
}

/**
 * Why the postmaster must not start now, or undefined if it may.
 *
 * @example
 * ```ts
 * startRefusal({ kind: 'fired', atMs: 1 }, 2); // 'the watchdog fired: ...'
 * ```
 */
export function startRefusal(state: WatchdogState, nowMs: number): string | undefined {
  const expired = state.kind === 'fired' || (state.kind === 'armed' && nowMs >= state.untilMs);
  return expired
    ? 'the watchdog fired: this instance may have lost the leader Lease, so postgres stays stopped until the agent renews its leadership or gives it up'
    : undefined;
}
