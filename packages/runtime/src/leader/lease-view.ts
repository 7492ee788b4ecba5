/**
 * A follower's view of one Lease, including "it does not exist", and the questions every
 * follower asks of it: who holds it, and when that hold runs out on this process's clock. Pure.
 * Built on lease-record.ts, so the elector and every follower judge expiry by the same rule.
 */
import { type Lease, type Observation, observe, expiresAtMs as recordExpiresAtMs } from './lease-record.js';

export interface LeaseView {
  /** Undefined when the Lease does not exist. */
  readonly lease: Lease | undefined;
  readonly exists: boolean;
  /** The observation of the record (undefined when the Lease does not exist). */
  readonly observation: Observation | undefined;
  /** Monotonic time the record (holder, times, duration, transitions) was last seen to change. */
  readonly observedAtMs: number;
}

/**
 * Folds a Lease (or its absence) into the previous view. An older resourceVersion from a slow
 * request never replaces a newer one; annotation-only changes keep the observation time.
 *
 * @example
 * ```ts
 * let view = foldLease(undefined, await leases.get('pg-leader', { namespace: 'db' }), performance.now());
 * ```
 */
export function foldLease(previous: LeaseView | undefined, lease: Lease | undefined, nowMs: number): LeaseView {
  if (lease === undefined) {
    if (previous && !previous.exists) return previous;
    return { lease: undefined, exists: false, observation: undefined, observedAtMs: nowMs };
  }
  const prior = previous?.lease?.metadata?.resourceVersion;
  const next = lease.metadata?.resourceVersion;
  // resourceVersions are opaque, but a Lease's come from one etcd revision counter: a read that
  // raced a newer write must not undo it.
  if (previous?.exists && prior !== undefined && next !== undefined && isOlder(next, prior)) return previous;
  const observation = observe(previous?.observation, lease, nowMs);
  return { lease, exists: true, observation, observedAtMs: observation.observedAtMs };
}

function isOlder(candidate: string, than: string): boolean {
  return /^\d+$/.test(candidate) && /^\d+$/.test(than) && BigInt(candidate) < BigInt(than);
}

/**
 * The holder, or undefined when nobody holds the Lease (or it does not exist).
 *
 * @example
 * ```ts
 * if (holderOf(view) === myName) lead();
 * ```
 */
export function holderOf(view: LeaseView | undefined): string | undefined {
  return view?.observation?.record.holderIdentity || undefined;
}

/**
 * When the holder's hold runs out on this process's monotonic clock; at once for a free Lease.
 *
 * @example
 * ```ts
 * const expired = view.exists && performance.now() >= leaseExpiresAtMs(view);
 * ```
 */
export function leaseExpiresAtMs(view: LeaseView): number {
  if (!view.observation || !holderOf(view)) return view.observedAtMs;
  return recordExpiresAtMs(view.observation);
}
