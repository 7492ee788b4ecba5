/**
 * The failsafe mode's decisions, with Patroni's `failsafe_mode` semantics on the leader Lease. Pure.
 *
 * While the API server cannot be reached, the primary asks every other member to vouch for it
 * (`POST /failsafe`) shortly before its renew deadline, and leads on for another renew deadline only
 * if every one of them does. A replica vouches only for the holder it follows, and from then on
 * judges that holder's Lease as held for a lease duration counted from its answer. That outlasts
 * the primary's extension (a renew deadline counted from before it asked), so no replica takes over
 * while the primary may still take writes, not even when the API server comes back and shows a
 * Lease that ran out long ago. Replicas never promote without the Lease: during an outage they
 * cannot take it anyway.
 */
import type { FailsafeAnswer } from '../../contract/index.js';

/** A replica's last promise: it vouched for `holder` at `atMs` (performance.now()). */
export interface Vouch {
  readonly holder: string;
  readonly atMs: number;
}

export interface VouchInput {
  readonly self: string;
  /** Who asks: the Lease holder the primary says it is. */
  readonly caller: string;
  readonly failsafeMode: boolean;
  /** This agent runs the replica role (not leading, rejoining, cloning, booting or stopping). */
  readonly following: boolean;
  /** The Lease holder this replica last saw. */
  readonly holder: string | undefined;
  /** That holder's Lease ran out on this replica's clock. */
  readonly holderExpired: boolean;
  readonly vouch: Vouch | undefined;
  readonly nowMs: number;
  readonly leaseDurationMs: number;
}

export type VouchDecision = { readonly accept: true } | { readonly accept: false; readonly reason: string };

/**
 * Whether a replica vouches for the caller. A Lease that already ran out here is vouched for only
 * while an earlier vouch lasts: otherwise this replica may be taking over at this very moment.
 *
 * @example
 * ```ts
 * decideVouch({ self: 'pg-1', caller: 'pg-0', failsafeMode: true, following: true, holder: 'pg-0',
 *   holderExpired: false, vouch: undefined, nowMs: 1_000, leaseDurationMs: 15_000 }); // { accept: true }
 * ```
 */
export function decideVouch(input: VouchInput): VouchDecision {
  const refuse = (reason: string): VouchDecision => ({ accept: false, reason });
  if (!input.failsafeMode) return refuse('failsafe mode is off');
  if (input.caller === input.self) return refuse('this instance is the caller');
  if (!input.following) return refuse('this instance does not follow a primary now');
  if (input.holder !== input.caller)
    return refuse(`the leader Lease is held by ${input.holder ?? 'nobody'}, as far as this instance knows`);
  if (input.holderExpired && !isVouchedFor(input.vouch, input.caller, input.nowMs, input.leaseDurationMs))
    return refuse(`the leader Lease of ${input.caller} ran out and it was not vouched for since`);
  return { accept: true };
}

/**
 * True while a vouch for `holder` lasts (a lease duration from it): the holder's Lease counts as held
 * then, whatever this replica's view of the Lease says.
 *
 * @example
 * ```ts
 * isVouchedFor({ holder: 'pg-0', atMs: 1_000 }, 'pg-0', 10_000, 15_000); // true
 * ```
 */
export function isVouchedFor(
  vouch: Vouch | undefined,
  holder: string | undefined,
  nowMs: number,
  leaseDurationMs: number,
): boolean {
  return vouch !== undefined && vouch.holder === holder && nowMs < vouch.atMs + leaseDurationMs;
}

/** One other member as the primary asked it: its answer, or why there was none. */
export interface MemberAnswer {
  readonly name: string;
  readonly answer: FailsafeAnswer | undefined;
  /** Why no answer came (no Pod IP, a timeout, a refused connection). */
  readonly problem?: string;
}

export type FailsafeDecision = { readonly keep: boolean; readonly message: string };

/**
 * Whether the primary leads on without the API server: only if every other member vouched for it
 * (a cluster of one vouches for itself).
 *
 * @example
 * ```ts
 * decideFailsafe([{ name: 'pg-1', answer: { name: 'pg-1', accepted: true } }]);
 * // { keep: true, message: 'vouched for by every other member (pg-1)' }
 * ```
 */
export function decideFailsafe(members: readonly MemberAnswer[]): FailsafeDecision {
  const refusals = members.flatMap((m) => {
    if (m.answer?.accepted) return [];
    if (m.answer) return [`${m.name} refused (${m.answer.reason ?? 'no reason given'})`];
    return [`${m.name} did not answer (${m.problem ?? 'no answer'})`];
  });
  if (refusals.length > 0) return { keep: false, message: `not vouched for: ${refusals.join('; ')}` };
  if (members.length === 0) return { keep: true, message: 'no other member to ask' };
  return { keep: true, message: `vouched for by every other member (${members.map((m) => m.name).join(', ')})` };
}
