/**
 * What the keeper (keeper/keeper.ts) and the instance agent it runs tell each other over the
 * Node.js IPC channel. The keeper owns the postmaster and the watchdog; the agent decides. Messages
 * about the postmaster carry its PID, so a late signal for a postmaster that has exited since can
 * never reach the next one.
 */

/** Set in the agent's environment by the keeper: main.ts runs the agent itself, not another keeper. */
export const AGENT_PROCESS_ENV = 'KANRI_AGENT_PROCESS';

/** Signals the agent may have the keeper send to the postmaster. */
export type PostmasterSignal = 'SIGHUP' | 'SIGINT' | 'SIGQUIT' | 'SIGKILL';

export type ToKeeper =
  /** What runs now: answered with `state`. A restarted agent asks it first. */
  | { readonly type: 'hello'; readonly id: number }
  /** Start the postmaster (unless one runs): answered with `started` or `refused`. */
  | { readonly type: 'start'; readonly id: number; readonly command: string; readonly args: readonly string[] }
  | { readonly type: 'signal'; readonly pid: number; readonly signal: PostmasterSignal }
  /**
   * Feed the watchdog: the postmaster must be stopped if not fed again before `untilMonotonicMs`
   * (process.hrtime in ms: CLOCK_MONOTONIC, one clock for every process of the host).
   */
  | { readonly type: 'arm'; readonly untilMonotonicMs: number }
  /** This instance does not lead (any more): no deadline. */
  | { readonly type: 'disarm' };

export type WatchdogStatus = 'idle' | 'armed' | 'fired';

export type ToAgent =
  | {
      readonly type: 'state';
      readonly id: number;
      /** The running postmaster's PID, if one runs. */
      readonly pid: number | undefined;
      readonly watchdog: WatchdogStatus;
    }
  | { readonly type: 'started'; readonly id: number; readonly pid: number }
  | { readonly type: 'refused'; readonly id: number; readonly reason: string }
  | { readonly type: 'line'; readonly pid: number; readonly line: string }
  | { readonly type: 'exit'; readonly pid: number; readonly code: number | null; readonly signal: string | null }
  /** The watchdog was not fed in time: the postmaster `pid` (if one ran) is being stopped. */
  | { readonly type: 'fired'; readonly pid: number | undefined; readonly lateMs: number };

/** The monotonic clock shared by every process of the host (performance.now() is per process). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000n) / 1_000;
}

/** A message from the other side, if it has the shape of one (anything else is ignored). */
export function isMessage<T extends { type: string }>(value: unknown): value is T {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}
