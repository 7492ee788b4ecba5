/**
 * Synchronous replication, planned one step at a time (Patroni's synchronous mode, strict).
 *
 * Two sets are kept apart: the standbys postgres waits for (`synchronous_standby_names`, exactly N
 * names with `FIRST N`, so every one of them acknowledges every commit) and the standbys published
 * in the Lease (the only ones a failover may promote). The invariant: every published standby holds
 * every acknowledged commit. Hence a standby leaves the published set BEFORE postgres stops waiting
 * for it, and joins it only AFTER postgres waits for it (its `sync_state` says so) and it has flushed
 * the WAL written up to that moment. Strict: with fewer than N healthy standbys the configured set
 * is kept, so commits wait rather than being acknowledged by fewer copies. Only a primary that never
 * had a synchronous standby (a new cluster) runs without one until N replicas stream. Pure.
 */
import { parseLsn } from '../lsn.js';

/** A replication connection as pg_stat_replication shows it. */
export interface StandbyConnection {
  readonly name: string;
  /** `streaming`, `catchup`, … */
  readonly state: string;
  /** `sync`, `quorum`, `potential` or `async`. */
  readonly syncState: string;
  readonly flushLsn: string | null;
}

/** A configured set waiting to be published: first postgres must use it, then its members catch up. */
export interface PendingSync {
  readonly members: readonly string[];
  /** The primary's LSN once postgres waited for every member; undefined until then. */
  readonly lsn: string | undefined;
}

export interface SyncInput {
  /** N: standbys that must acknowledge each commit; 0 = asynchronous. */
  readonly number: number;
  /** Published in the Lease. */
  readonly published: readonly string[];
  /** In postgres's synchronous_standby_names; `['*']` means any N standbys (after a promotion). */
  readonly configured: readonly string[];
  readonly connections: readonly StandbyConnection[];
  readonly pending: PendingSync | undefined;
  /** The primary's current WAL LSN. */
  readonly currentLsn: string;
}

export type SyncAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'wait'; readonly reason: string }
  /** Write the Lease annotation. */
  | { readonly kind: 'publish'; readonly members: readonly string[] }
  /** Write synchronous_standby_names and reload; then track `pending`. */
  | { readonly kind: 'configure'; readonly members: readonly string[] }
  /** Postgres now waits for every pending member: remember the LSN they must reach. */
  | { readonly kind: 'capture'; readonly lsn: string };

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x));

/**
 * Any N standbys: what a leadership after a failover waits for until it publishes its own, and
 * what a following replica carries so that it can promote without a file write (roles/replica.ts).
 */
export const ANY_STANDBY: readonly string[] = ['*'];

/** The `synchronous_standby_names` value for `members`: `FIRST 1 ("db-i-1")`, `FIRST 1 (*)`, or ''. */
export function renderSynchronousStandbyNames(number: number, members: readonly string[]): string {
  if (number <= 0 || members.length === 0) return '';
  const names = members.map((m) => (m === '*' ? '*' : `"${m.replace(/"/g, '""')}"`));
  return `FIRST ${number} (${names.join(', ')})`;
}

/** The standbys postgres should wait for: healthy current members first, then others by name. */
export function chooseSynchronous(
  number: number,
  configured: readonly string[],
  connections: readonly StandbyConnection[],
): string[] {
  if (number <= 0) return [];
  const streaming = connections.filter((c) => c.state === 'streaming').map((c) => c.name);
  const kept = configured.filter((m) => m !== '*' && streaming.includes(m));
  const others = streaming.filter((m) => !kept.includes(m)).sort();
  const chosen = [...kept, ...others].slice(0, number);
  if (chosen.length === number) return chosen;
  // Strict: too few healthy standbys. Keep waiting for the configured ones rather than fewer copies.
  return configured.length > 0 ? [...configured] : [];
}

/**
 * The next step. Run it, observe again, and plan again.
 *
 * @example
 * ```ts
 * planSync({ number: 1, published: [], configured: [], connections: [{ name: 'db-1', state: 'streaming',
 *   syncState: 'async', flushLsn: '0/5000000' }], pending: undefined, currentLsn: '0/5000000' });
 * // { kind: 'configure', members: ['db-1'] }
 * ```
 */
export function planSync(input: SyncInput): SyncAction {
  const { number, published, configured, connections, pending } = input;
  if (number <= 0) {
    if (configured.length > 0) return { kind: 'configure', members: [] };
    if (published.length > 0) return { kind: 'publish', members: [] };
    return { kind: 'none' };
  }
  const wanted = chooseSynchronous(number, configured, connections);
  if (!sameSet(wanted, configured)) {
    // Shrink the published set first: a standby postgres will stop waiting for must not be promotable.
    const keep = published.filter((m) => wanted.includes(m));
    if (keep.length !== published.length) return { kind: 'publish', members: keep };
    return { kind: 'configure', members: wanted };
  }
  const extra = published.filter((m) => !configured.includes(m));
  if (extra.length > 0) return { kind: 'publish', members: published.filter((m) => configured.includes(m)) };
  const unpublished = configured.filter((m) => m !== '*' && !published.includes(m));
  if (unpublished.length === 0) {
    if (configured.length === 0) return { kind: 'wait', reason: `waiting for ${number} streaming replica(s)` };
    if (configured.includes('*'))
      return { kind: 'wait', reason: `waiting for ${number} replica(s) to stream before naming them` };
    return { kind: 'none' };
  }
  const byName = new Map(connections.map((c) => [c.name, c]));
  if (!pending || !sameSet(pending.members, configured)) {
    // Configured by an earlier leadership: configure it again, which starts its confirmation.
    return { kind: 'configure', members: [...configured] };
  }
  if (pending.lsn === undefined) {
    const notYet = unpublished.filter((m) => byName.get(m)?.syncState !== 'sync');
    if (notYet.length > 0) return { kind: 'wait', reason: `waiting for ${notYet.join(', ')} to become synchronous` };
    return { kind: 'capture', lsn: input.currentLsn };
  }
  const target = parseLsn(pending.lsn) ?? 0;
  const behind = unpublished.filter((m) => (parseLsn(byName.get(m)?.flushLsn) ?? -1) < target);
  if (behind.length > 0) return { kind: 'wait', reason: `waiting for ${behind.join(', ')} to flush ${pending.lsn}` };
  return { kind: 'publish', members: [...configured] };
}
