/**
 * The leader Lease's timings as this agent uses them, from the typed spec (contract/ha-defaults.ts
 * fills defaults). A change of `spec.ha` reaches running agents: a follower's next lap, and a
 * primary's next leadership (the elector is built per campaign). Expiry itself is judged from the
 * duration the holder wrote on the Lease, so a primary and its replicas never disagree on it.
 */
import type { AgentContext } from './context.js';

export interface LeaseTimings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export function leaseTimings(ctx: Pick<AgentContext, 'view'>): LeaseTimings {
  const ha = ctx.view.ha;
  return {
    leaseDurationMs: ha.leaseDurationSeconds * 1000,
    renewDeadlineMs: ha.renewDeadlineSeconds * 1000,
    retryPeriodMs: ha.retryPeriodSeconds * 1000,
  };
}
