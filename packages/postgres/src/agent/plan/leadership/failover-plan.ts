/**
 * Which replica takes over when the leader Lease has expired: the most advanced healthy replica
 * within the lag limit (and, in synchronous mode, one of the published synchronous standbys, or a
 * replica provably ahead of them: see synchronousEligible).
 * Every replica runs the same rule on the same data, so they agree on one winner; the Lease's
 * resourceVersion precondition settles any race. Pure.
 */

import { lsnDistance, parseLsn } from '../lsn.js';
import { type FailsafeMembers, unlistedRefusal } from './failsafe-plan.js';

/** One instance as a candidate sees it (its live status, or its own observation). */
export interface Candidate {
  readonly name: string;
  /** Runs as a replica in recovery and is not rejoining or cloning: it could be promoted. */
  readonly eligible: boolean;
  /** Why it is not eligible. */
  readonly why?: string;
  readonly systemIdentifier: string;
  readonly timeline: number;
  readonly receivedLsn: string;
  readonly replayedLsn: string;
}

export interface FailoverInput {
  readonly self: string;
  /** The instances that answered (self included), never the last holder. */
  readonly candidates: readonly Candidate[];
  /** The system identifier of this instance: others are not members of the same database. */
  readonly systemIdentifier: string;
  /** The highest LSN the primary is known to have reached (its reports, the replicas' WAL receivers). */
  readonly primaryLsn: string | undefined;
  readonly maximumLagBytes: number;
  /** Synchronous mode: the Pods published in the Lease; only they, or a replica ahead of them, may be promoted. */
  readonly synchronousStandbys: readonly string[] | undefined;
  /** The grace period for better candidates has run out: this one may go ahead of them. */
  readonly graceOver: boolean;
  /**
   * The last holder, when this replica vouched for it in failsafe mode less than a lease duration
   * ago (plan/leadership/failsafe-plan.ts): it may still be taking writes, so nobody takes over from it yet.
   */
  readonly vouchedFor?: string;
  /**
   * The member list the last holder published on its Lease, when it binds (failsafe-plan.ts,
   * bindingMembers): an instance not on it never takes over, and ranks only those on it.
   */
  readonly failsafeMembers?: FailsafeMembers;
}

export type FailoverDecision =
  | { readonly take: true; readonly message: string }
  | {
      readonly take: false;
      readonly message: string;
      /** The replica that should win instead, when one may: a replica can follow it early. */
      readonly best?: string;
    };

/** Received LSN, then replayed LSN, then timeline (all descending), then Pod name: a total order. */
export function compareCandidates(a: Candidate, b: Candidate): number {
  const byLsn = (x: string, y: string) => (parseLsn(y) ?? -1) - (parseLsn(x) ?? -1);
  return (
    byLsn(a.receivedLsn, b.receivedLsn) ||
    byLsn(a.replayedLsn, b.replayedLsn) ||
    b.timeline - a.timeline ||
    a.name.localeCompare(b.name)
  );
}

/**
 * Synchronous mode: may `c` be promoted? A published standby may. So may any other replica on the
 * same timeline that has flushed strictly more WAL than every published standby that answered
 * (at least one must): every published standby holds every acknowledged commit (plan/leadership/sync-plan.ts),
 * so such a replica holds them too. Promoting the published standby instead would make the replica
 * that is ahead rewind (hundreds of ms in the failover benchmark) and throw away WAL it already had.
 */
export function synchronousEligible(c: Candidate, published: readonly string[], answered: readonly Candidate[]) {
  if (published.includes(c.name)) return true;
  const standbys = answered.filter((s) => published.includes(s.name));
  const flushed = parseLsn(c.receivedLsn);
  return (
    standbys.length > 0 &&
    flushed !== undefined &&
    standbys.every((s) => s.timeline === c.timeline && flushed > (parseLsn(s.receivedLsn) ?? Number.POSITIVE_INFINITY))
  );
}

/** `16 MiB`, `512 kiB`, `40 B`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} kiB`;
  return `${bytes} B`;
}

/**
 * @example
 * ```ts
 * decideFailover({ self: 'db-1', candidates, systemIdentifier, primaryLsn: '0/5000000',
 *   maximumLagBytes: 16 << 20, synchronousStandbys: undefined, graceOver: false });
 * // { take: true, message: 'taking over: the most advanced replica (received 0/5000000, replayed 0/5000000, lag 0 B; ahead of db-2 received 0/4000000, replayed 0/4000000)' }
 * ```
 */
export function decideFailover(input: FailoverInput): FailoverDecision {
  if (input.vouchedFor !== undefined)
    return {
      take: false,
      message: `waiting: this replica vouched for ${input.vouchedFor} in failsafe mode less than a lease duration ago`,
    };
  const listed = input.failsafeMembers;
  const unlisted = listed && unlistedRefusal(input.self, listed.holder, listed);
  if (unlisted) return { take: false, message: `waiting: ${unlisted}` };
  const me = input.candidates.find((c) => c.name === input.self);
  if (!me?.eligible) return { take: false, message: `not a candidate: ${me?.why ?? 'no status'}` };
  const sync = input.synchronousStandbys;
  // An unlisted peer never takes over: waiting for it to would only delay the failover.
  const members = input.candidates.filter(
    (c) => c.systemIdentifier === input.systemIdentifier && (!listed || listed.members.includes(c.name)),
  );
  const allowed = (c: Candidate) => sync === undefined || synchronousEligible(c, sync, members);
  const lagOf = (c: Candidate) => lsnDistance(c.receivedLsn, input.primaryLsn);
  const ranked = members
    .filter((c) => c.eligible)
    .filter(allowed)
    .sort(compareCandidates);
  const within = ranked.filter((c) => lagOf(c) <= input.maximumLagBytes);
  // Who should win when it is not this replica: it may follow that one early (roles/replica.ts).
  const winner = within[0] && within[0] !== me ? { best: within[0].name } : {};
  if (sync !== undefined && !allowed(me))
    return {
      take: false,
      message: `waiting: synchronous mode, and this replica is neither a synchronous standby (${sync.join(', ') || 'none published'}) nor ahead of them`,
      ...winner,
    };
  if (within.length === 0) {
    const lags = ranked.map((c) => `${c.name} lags ${formatBytes(lagOf(c))}`).join(', ');
    return {
      take: false,
      message: `waiting: no replica within lag limit (${lags} > ${formatBytes(input.maximumLagBytes)})`,
    };
  }
  if (!within.includes(me))
    return {
      take: false,
      message: `waiting: this replica lags ${formatBytes(lagOf(me))} > ${formatBytes(input.maximumLagBytes)}`,
      ...winner,
    };
  const best = within[0] as Candidate;
  const where = `received ${me.receivedLsn}, replayed ${me.replayedLsn}, lag ${formatBytes(lagOf(me))}`;
  if (best === me) {
    // Who it outranked, so that the Promoted Event says why this replica and not another.
    const behind = ranked
      .filter((c) => c !== me)
      .map((c) => `${c.name} received ${c.receivedLsn}, replayed ${c.replayedLsn}`);
    const ahead = behind.length > 0 ? `; ahead of ${behind.join('; ')}` : '';
    return { take: true, message: `taking over: the most advanced replica (${where}${ahead})` };
  }
  if (input.graceOver)
    return {
      take: true,
      message: `taking over: ${best.name} is more advanced but did not take over in time (${where})`,
    };
  return {
    take: false,
    ...winner,
    message: `waiting: ${best.name} is more advanced (received ${best.receivedLsn}, replayed ${best.replayedLsn})`,
  };
}
