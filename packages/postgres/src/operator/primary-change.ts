/**
 * The record of which instance is the primary (`status.lastPrimary`), and the `PrimaryChanged`
 * Event each switchover or failover gets once.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import type { StepOutcome } from './step-outcome.js';

/**
 * The primary each cluster (by uid) was last announced with. The reconcile after a status write
 * can still read the cluster from before it (the cache lags under load), and would announce the
 * same change twice; a restarted operator announces at most once more.
 */
const announced = new Map<string, string>();

/**
 * `status.lastPrimary` for the primary this pass observed, and a `PrimaryChanged` Event when it
 * is not the one before.
 *
 * @example
 * ```ts
 * outcomes.push(await announcePrimary(cluster, ctx, observed.primary));
 * ```
 */
export async function announcePrimary(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'event'>,
  primary: string | undefined,
): Promise<StepOutcome> {
  // Mid-handover no instance serves as primary, and a status written then has none: compare
  // with the last one ever seen, or a switchover or failover would pass unrecorded.
  const previousPrimary = cluster.status?.lastPrimary ?? cluster.status?.primary;
  const lastPrimary = primary ?? previousPrimary;
  const uid = cluster.metadata?.uid ?? '';
  if (previousPrimary && primary && previousPrimary !== primary && announced.get(uid) !== primary) {
    announced.set(uid, primary);
    await ctx.event('Normal', 'PrimaryChanged', `primary is now ${primary} (was ${previousPrimary})`);
  }
  return lastPrimary ? { status: { lastPrimary } } : {};
}
