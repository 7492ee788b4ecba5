/**
 * What one leadership keeps between its loops (the primary's tasks, the synchronous-standby loop
 * and a switchover): made when the elector's campaign starts, dropped when it ends, so nothing
 * of a past leadership leaks into the next.
 */
import type { PendingSync } from '../plan/leadership/sync-plan.js';

export class PrimarySession {
  /** Aborting it ends the campaign: another instance holds the Lease (or it was handed over). */
  readonly election = new AbortController();
  /** Who holds the Lease now, when another instance was seen holding it or it was handed over. */
  takenBy: string | undefined;
  /** Why this primary gave the Lease up (roles/step-down.ts), once it did. */
  steppedDown: string | undefined;
  /** A switchover is stopping writes: the other loops stand still, and fencing is expected. */
  switching = false;
  /** synchronous_standby_names as configured in postgres now. */
  syncConfigured: string[] = [];
  syncPending: PendingSync | undefined;
  /** Users and databases need a pass (the spec changed, or the last pass failed). */
  usersDue = true;
  /**
   * The cluster view's switchover withdrawals (ClusterView.switchoverWithdrawals) when the Lease's
   * served record was last current for this leadership: at its start, and each time it wrote one.
   * A withdrawal of the served value since then makes a request of that value a new one
   * (roles/switchover.ts).
   */
  servedAsOf: ReadonlyMap<string, number>;

  constructor(switchoverWithdrawals: ReadonlyMap<string, number>) {
    this.servedAsOf = switchoverWithdrawals;
  }
}
