/**
 * The pure half of leader election: what a Lease says, when this candidate last saw it change,
 * and whether it may take the Lease now. Kept free of I/O and of clocks so the rules can be tested alone.
 */
import type { ObjectOf } from '@kanri/client';
import { formatMicroTime } from '@kanri/timing';

export { formatMicroTime };

export type Lease = ObjectOf<'coordination.k8s.io/v1', 'Lease'>;
export type LeaseSpec = NonNullable<Lease['spec']>;

/**
 * The one expiry default: a holder whose record states no duration is given client-go's default
 * of 15 s, on every side (elector, followers, agents), so none can judge it expired sooner.
 */
export const DEFAULT_LEASE_DURATION_SECONDS = 15;

/** The fields of a Lease's spec that leader election reads and writes. */
export interface LeaseRecord {
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: string | undefined;
  readonly renewTime: string | undefined;
  readonly leaseTransitions: number;
}

/**
 * A Lease as one candidate saw it, and when (on its own monotonic clock) it last saw the record change.
 * `observedAtMs` is what expiry is measured from, never the server's renewTime.
 */
export interface Observation {
  readonly lease: Lease;
  readonly record: LeaseRecord;
  readonly observedAtMs: number;
}

/**
 * - `free`: nobody holds it (never held, or released);
 * - `ours`: the record names this candidate;
 * - `expired`: another holder has not changed the record for its whole lease duration;
 * - `held`: another holder, still within its lease.
 */
export type LeaseVerdict = 'free' | 'ours' | 'expired' | 'held';

/** `lease` with `spec` written over its spec. */
export function withSpec(lease: Lease, spec: LeaseSpec): Lease {
  return { ...lease, spec: { ...lease.spec, ...spec } };
}

/** The record in a Lease; a missing holder and an empty one both mean "free". */
export function recordOf(lease: Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds ?? DEFAULT_LEASE_DURATION_SECONDS,
    acquireTime: spec.acquireTime,
    renewTime: spec.renewTime,
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

/**
 * Compares the spec only, as client-go compares its raw record: a label or annotation edit bumps the
 * resourceVersion but is no sign of life from the holder, and must not keep a dead holder's lease alive.
 */
function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/**
 * Folds a freshly read Lease into what was seen before. The observation time moves only when the
 * record changed: a holder that stopped renewing keeps the same record, so its lease runs out
 * `leaseDurationSeconds` after this candidate first saw that record, whatever the clocks of the
 * holder and the server say.
 *
 * @example
 * ```ts
 * let seen = observe(undefined, lease, performance.now());
 * seen = observe(seen, await leases.get('my-lock', { namespace: 'ops' }), performance.now());
 * ```
 */
export function observe(previous: Observation | undefined, lease: Lease, nowMs: number): Observation {
  const record = recordOf(lease);
  if (previous && sameRecord(previous.record, record)) return { lease, record, observedAtMs: previous.observedAtMs };
  return { lease, record, observedAtMs: nowMs };
}

/** The local monotonic time at which the observed lease runs out (the holder's own duration, as the record states it). */
export function expiresAtMs(observation: Observation): number {
  return observation.observedAtMs + observation.record.leaseDurationSeconds * 1000;
}

/**
 * Whether `identity` may take the observed Lease at local monotonic time `nowMs`.
 *
 * @example
 * ```ts
 * const seen = observe(undefined, await leases.get('my-lock', { namespace: 'ops' }), performance.now());
 * if (judgeLease(seen, 'pod-a_123_x1', performance.now()) !== 'held') {
 *   await leases.update({ ...seen.lease, spec: holderSpec(seen.record, 'pod-a_123_x1', 15, new Date()) });
 * }
 * ```
 */
export function judgeLease(observation: Observation, identity: string, nowMs: number): LeaseVerdict {
  const holder = observation.record.holderIdentity;
  if (holder === '') return 'free';
  if (holder === identity) return 'ours';
  return nowMs >= expiresAtMs(observation) ? 'expired' : 'held';
}

/**
 * The spec `identity` writes to acquire or renew. Renewing keeps the acquire time and transition
 * count; taking over from anyone else (or from nobody, after a release) counts one transition.
 * A brand-new Lease starts at zero transitions.
 *
 * @example
 * ```ts
 * const spec = holderSpec(seen?.record, 'pod-a_123_x1', 15, new Date());
 * ```
 */
export function holderSpec(
  previous: LeaseRecord | undefined,
  identity: string,
  leaseDurationSeconds: number,
  now: Date,
): LeaseSpec {
  const time = formatMicroTime(now);
  const renewing = previous?.holderIdentity === identity;
  return {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: renewing ? (previous.acquireTime ?? time) : time,
    renewTime: time,
    leaseTransitions: previous === undefined ? 0 : renewing ? previous.leaseTransitions : previous.leaseTransitions + 1,
  };
}

/**
 * The spec a leader writes to give the Lease up, as client-go's ReleaseOnCancel does: no holder and a
 * one-second duration, so even a candidate that ignores the empty holder waits at most a second.
 *
 * @example
 * ```ts
 * await leases.update({ ...ownLease, spec: { ...ownLease.spec, ...releasedSpec(recordOf(ownLease), new Date()) } });
 * ```
 */
export function releasedSpec(previous: LeaseRecord, now: Date): LeaseSpec {
  const time = formatMicroTime(now);
  return {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: time,
    renewTime: time,
    leaseTransitions: previous.leaseTransitions,
  };
}
