/**
 * What a replica does on one lap, from what it sees of the Lease. Pure: the replica role acts on
 * the step; failover itself is decided by failover-plan.ts.
 */

export interface ReplicaLapInput {
  readonly self: string;
  /** A postgres log line saying this replica's WAL left the primary's history. */
  readonly diverged: string | undefined;
  /** A postgres log line saying the primary removed WAL this replica still needs. */
  readonly walRemoved?: string | undefined;
  readonly leaseExists: boolean;
  readonly holder: string | undefined;
  /** The holder's hold ran out on this agent's clock (always true for a free Lease). */
  readonly expired: boolean;
  /**
   * This replica vouched for the holder in failsafe mode less than a lease duration ago
   * (plan/leadership/failsafe-plan.ts): the holder may still take writes, so its Lease counts as held.
   */
  readonly vouched: boolean;
}

export type ReplicaStep =
  /** Rewind (or re-clone) before following again. */
  | { readonly kind: 'rejoin'; readonly line: string }
  /** The WAL it needs is gone from the primary: streaming cannot resume, only a new clone helps. */
  | { readonly kind: 'reclone'; readonly line: string }
  /** The Lease names this instance: confirm with a fresh read, then lead. */
  | { readonly kind: 'confirm-lead' }
  /** Stream from the holder. */
  | { readonly kind: 'follow'; readonly holder: string }
  /** No live primary: rank the candidates, and take the Lease if this one wins. */
  | { readonly kind: 'consider-failover' }
  /** No Lease at all (a cluster not yet bootstrapped): keep postgres up and wait. */
  | { readonly kind: 'wait' };

/**
 * @example
 * ```ts
 * planReplicaLap({ self: 'pg-1', diverged: undefined, leaseExists: true, holder: 'pg-0', expired: false, vouched: false });
 * // { kind: 'follow', holder: 'pg-0' }
 * ```
 */
export function planReplicaLap(input: ReplicaLapInput): ReplicaStep {
  if (input.diverged !== undefined) return { kind: 'rejoin', line: input.diverged };
  // Only while a primary leads: without one there is nobody to clone, and a failover may choose it.
  if (input.walRemoved !== undefined && input.holder && input.holder !== input.self && !input.expired)
    return { kind: 'reclone', line: input.walRemoved };
  if (input.holder === input.self) return { kind: 'confirm-lead' };
  if (input.holder && (!input.expired || input.vouched)) return { kind: 'follow', holder: input.holder };
  if (input.leaseExists) return { kind: 'consider-failover' };
  return { kind: 'wait' };
}
