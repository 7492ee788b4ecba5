/**
 * What an instance does at start, decided from its data directory and the leader Lease alone:
 * initialise, clone, or run what it has — and as which role.
 */
import type { Bootstrap } from '../../contract/index.js';

export interface BootState {
  /** PGDATA holds a cluster (PG_VERSION exists). */
  readonly hasData: boolean;
  /** PGDATA holds standby.signal. */
  readonly isStandby: boolean;
  readonly mode: Bootstrap;
  /** The leader Lease exists: some instance finished initdb once, so the cluster exists. */
  readonly leaseExists: boolean;
  /** The Lease's holder; undefined when there is no Lease or nobody holds it. */
  readonly leaseHolder: string | undefined;
  readonly self: string;
  /** Mode `restore` and this restore id has not succeeded here yet (see roles/restore.ts). */
  readonly restorePending?: boolean;
}

export type BootPlan =
  /** No data: create a new cluster, then campaign for the Lease. */
  | { readonly action: 'initdb' }
  /** No data: clone the primary (the Lease holder). */
  | { readonly action: 'basebackup' }
  /** Data of a primary, and nobody else holds the Lease: take (or keep) it and run as primary. */
  | { readonly action: 'lead' }
  /** Data of a standby: follow the Lease holder. */
  | { readonly action: 'follow' }
  /** Data of a former primary while another instance holds the Lease: rewind it, then follow. */
  | { readonly action: 'rejoin'; readonly leader: string }
  /** Restore from a repo (a clone, or an in-place restore), then lead. */
  | { readonly action: 'restore' };

/**
 * @example
 * ```ts
 * planBoot({ hasData: false, isStandby: false, mode: 'initdb', leaseExists: false, leaseHolder: undefined, self: 'db-1' });
 * // { action: 'initdb' }
 * ```
 */
export function planBoot(state: BootState): BootPlan {
  const heldByOther = state.leaseHolder !== undefined && state.leaseHolder !== state.self;
  // Never while another instance leads: a restored primary beside it would fork the cluster.
  if (state.mode === 'restore' && state.restorePending && !heldByOther) return { action: 'restore' };
  if (!state.hasData) {
    // The Lease is created only after initdb completed: if it exists, initdb again would fork the cluster
    // (even when it names this very instance, whose volume must have been lost).
    if (state.mode === 'initdb' && !state.leaseExists) return { action: 'initdb' };
    return { action: 'basebackup' };
  }
  if (state.isStandby) return { action: 'follow' };
  if (heldByOther) return { action: 'rejoin', leader: state.leaseHolder as string };
  return { action: 'lead' };
}
