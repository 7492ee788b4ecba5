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
 *
 * "Every member" is the list the primary published on its Lease (ANNOTATION.failsafeMembers), as
 * Patroni's leader writes its `/failsafe` key: an instance the primary does not know (added while
 * it was cut off from the API server) is never asked, so it must never take the Lease from that
 * primary either, whatever the time and whatever it sees of the failsafe mode. The primary
 * publishes a change only while it is not leading on vouches, and asks every list it may have
 * published, so no instance becomes able to take over from an extension it never granted.
 */
import { ANNOTATION, type FailsafeAnswer } from '../../../contract/index.js';

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

/** The members a primary published on its Lease (ANNOTATION.failsafeMembers). */
export interface FailsafeMembers {
  /** Who wrote it: the list binds only while that instance holds the Lease. */
  readonly holder: string;
  /** The instances it asks to vouch for it (itself included), sorted. */
  readonly members: readonly string[];
}

/**
 * The list on a Lease's annotations; undefined when absent or malformed (then nothing binds, as
 * on a Lease written before the list existed, or by an agent that does not write it).
 *
 * @example
 * ```ts
 * readFailsafeMembers({ [ANNOTATION.failsafeMembers]: '{"holder":"pg-0","members":["pg-0","pg-1"]}' });
 * // { holder: 'pg-0', members: ['pg-0', 'pg-1'] }
 * ```
 */
export function readFailsafeMembers(
  annotations: Readonly<Record<string, string>> | undefined,
): FailsafeMembers | undefined {
  const raw = annotations?.[ANNOTATION.failsafeMembers];
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as { holder?: unknown; members?: unknown };
    const { holder, members } = parsed;
    if (typeof holder !== 'string' || !holder || !Array.isArray(members)) return undefined;
    if (!members.every((m): m is string => typeof m === 'string' && m !== '')) return undefined;
    return { holder, members };
  } catch {
    return undefined;
  }
}

/**
 * The annotation value for `list`.
 *
 * @example
 * ```ts
 * encodeFailsafeMembers({ holder: 'pg-0', members: ['pg-0', 'pg-1'] }); // '{"holder":"pg-0","members":["pg-0","pg-1"]}'
 * ```
 */
export function encodeFailsafeMembers(list: FailsafeMembers): string {
  return JSON.stringify({ holder: list.holder, members: list.members });
}

/**
 * The list `self` publishes: the instances it sees, itself included.
 *
 * @example
 * ```ts
 * memberListFor('pg-0', ['pg-2', 'pg-1', 'pg-0']); // { holder: 'pg-0', members: ['pg-0', 'pg-1', 'pg-2'] }
 * ```
 */
export function memberListFor(self: string, pods: readonly string[]): FailsafeMembers {
  return { holder: self, members: [...new Set([...pods.filter(Boolean), self])].sort() };
}

/**
 * The list that binds while `holder` holds the Lease: only its own (a former holder's list
 * bound nobody once the Lease changed hands).
 *
 * @example
 * ```ts
 * bindingMembers({ holder: 'pg-0', members: ['pg-0', 'pg-1'] }, 'pg-0'); // the list
 * bindingMembers({ holder: 'pg-0', members: ['pg-0', 'pg-1'] }, 'pg-1'); // undefined
 * ```
 */
export function bindingMembers(
  list: FailsafeMembers | undefined,
  holder: string | undefined,
): FailsafeMembers | undefined {
  return list && holder && list.holder === holder ? list : undefined;
}

/**
 * Why `self` must not take the Lease from `holder`, or undefined when it may (as far as the
 * failsafe mode goes). Not on the holder's own list: the holder may be leading on its members'
 * vouches right now, without ever having asked this instance, however expired its Lease looks.
 * Independent of the failsafe mode as this instance sees it: a primary cut off from the API server
 * cannot see the mode turned off either; it removes its list once it does.
 *
 * @example
 * ```ts
 * unlistedRefusal('pg-2', 'pg-0', { holder: 'pg-0', members: ['pg-0', 'pg-1'] });
 * // 'this instance is not on the failsafe member list of pg-0 (pg-0, pg-1): …'
 * ```
 */
export function unlistedRefusal(
  self: string,
  holder: string | undefined,
  list: FailsafeMembers | undefined,
): string | undefined {
  const binding = bindingMembers(list, holder);
  if (!binding || binding.members.includes(self)) return undefined;
  return `this instance is not on the failsafe member list of ${binding.holder} (${binding.members.join(', ')}): ${binding.holder} may be leading on those members' vouches without having asked this one, so only they may take over from it`;
}

export interface MemberListInput {
  readonly self: string;
  readonly failsafeMode: boolean;
  /** The Pods' cache holds a complete list. */
  readonly podsSynced: boolean;
  /** The cluster's instances as the cache has them. */
  readonly pods: readonly string[];
  /** The list on the Lease now, whoever wrote it. */
  readonly published: FailsafeMembers | undefined;
  /**
   * This primary leads on vouches now (or is asking for them), with no renewal since: a member
   * published now would not have vouched for the extension it runs on, yet could take over.
   */
  readonly leadingOnVouches: boolean;
}

/** The write the primary makes to its Lease: a new list, null to remove it, or none. */
export type MemberListChange = { readonly write: FailsafeMembers | null } | undefined;

/**
 * Whether the primary writes its member list: only when the members changed (the Lease is not
 * written on every renewal for it), never while it leads on vouches, and removed once the
 * failsafe mode is off (it then never leads on vouches, so the list need not bind anyone).
 *
 * @example
 * ```ts
 * planMemberList({ self: 'pg-0', failsafeMode: true, podsSynced: true, pods: ['pg-0', 'pg-1', 'pg-2'],
 *   published: { holder: 'pg-0', members: ['pg-0', 'pg-1'] }, leadingOnVouches: false });
 * // { write: { holder: 'pg-0', members: ['pg-0', 'pg-1', 'pg-2'] } }
 * ```
 */
export function planMemberList(input: MemberListInput): MemberListChange {
  if (input.leadingOnVouches) return undefined;
  if (!input.failsafeMode) return input.published ? { write: null } : undefined;
  if (!input.podsSynced) return undefined;
  const wanted = memberListFor(input.self, input.pods);
  const current = bindingMembers(input.published, input.self)?.members;
  if (current && current.length === wanted.members.length && current.every((m, i) => m === wanted.members[i]))
    return undefined;
  return { write: wanted };
}

export interface VouchRoundInput {
  readonly self: string;
  /** The list on the Lease as this primary last saw it. */
  readonly published: FailsafeMembers | undefined;
  /** Writes of the list (null: its removal) sent without learning whether they landed. */
  readonly unconfirmed: readonly (FailsafeMembers | null)[];
}

export type VouchRound = { readonly ask: readonly string[] } | { readonly refuse: string };

/**
 * Whom the primary asks to vouch for it: every member of every list of its own that the Lease may
 * carry. Without its own list surely there, an instance it never asks may be free to take over,
 * so it does not lead on at all (Patroni likewise gives up when its name is not in `/failsafe`).
 *
 * @example
 * ```ts
 * planVouchRound({ self: 'pg-0', published: { holder: 'pg-0', members: ['pg-0', 'pg-1'] },
 *   unconfirmed: [{ holder: 'pg-0', members: ['pg-0', 'pg-1', 'pg-2'] }] });
 * // { ask: ['pg-1', 'pg-2'] }
 * ```
 */
export function planVouchRound(input: VouchRoundInput): VouchRound {
  const own = bindingMembers(input.published, input.self);
  if (!own)
    return {
      refuse:
        'this primary has not published its member list on the leader Lease: an instance it would not ask could take over',
    };
  if (input.unconfirmed.includes(null))
    return { refuse: 'the removal of its member list from the leader Lease may have landed' };
  const lists = [own, ...(input.unconfirmed as FailsafeMembers[])];
  const ask = new Set(lists.flatMap((list) => list.members));
  ask.delete(input.self);
  return { ask: [...ask].sort() };
}
