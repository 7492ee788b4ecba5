/**
 * What a starting agent does with a postgres its keeper kept running (the previous agent process
 * died, postgres did not): keep it, in the role it has, or stop it and boot as from stopped. Pure.
 *
 * Only a primary whose Lease still names this Pod keeps taking writes: the watchdog guards it
 * until the new agent renews that Lease (or fails to, and fences). A standby keeps streaming. Any
 * other postgres is stopped first, because boot (plan/bootstrap-plan.ts) decides from a stopped one.
 */
import type { WatchdogStatus } from '../keeper/protocol.js';

export interface AdoptionInput {
  /** The keeper runs a postmaster. */
  readonly postgresRunning: boolean;
  /** Its pg_is_in_recovery(); undefined when it could not be asked (starting, stopping). */
  readonly inRecovery: boolean | undefined;
  readonly watchdog: WatchdogStatus;
  /** The leader Lease's holder, from a quorum read. */
  readonly leaseHolder: string | undefined;
  readonly self: string;
  /** A restore is to run here: it starts from a stopped postgres (roles/restore.ts). */
  readonly restorePending: boolean;
}

export type AdoptionPlan =
  /** Nothing runs: boot as usual. */
  | { readonly action: 'boot' }
  /** A primary holding this Pod's Lease: lead with it running, writes never stop. */
  | { readonly action: 'lead' }
  /** A standby: follow with it running. */
  | { readonly action: 'follow' }
  /** Stop it, then boot as usual. */
  | { readonly action: 'stop'; readonly why: string };

/**
 * @example
 * ```ts
 * planAdoption({ postgresRunning: true, inRecovery: false, watchdog: 'armed', leaseHolder: 'db-0', self: 'db-0', restorePending: false });
 * // { action: 'lead' }
 * ```
 */
export function planAdoption(input: AdoptionInput): AdoptionPlan {
  if (!input.postgresRunning) return { action: 'boot' };
  if (input.watchdog === 'fired') return { action: 'stop', why: 'the watchdog fired: the keeper is stopping it' };
  if (input.restorePending)
    return { action: 'stop', why: 'a restore is pending, which starts from a stopped postgres' };
  if (input.inRecovery === undefined)
    return { action: 'stop', why: 'it does not answer, so whether it is a primary is unknown' };
  if (input.inRecovery) return { action: 'follow' };
  if (input.leaseHolder === input.self) return { action: 'lead' };
  return {
    action: 'stop',
    why: `it runs as primary while the leader Lease is ${input.leaseHolder ? `held by ${input.leaseHolder}` : 'free'}`,
  };
}
