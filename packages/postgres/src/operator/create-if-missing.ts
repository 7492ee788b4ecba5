import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';

/**
 * Creates `desired` once; afterwards only its labels are kept up to date (a no-op while the
 * cached object carries them). A create that finds the name taken is fine: the cache may lag our
 * own earlier create, and the next event brings the object.
 *
 * @example
 * ```ts
 * await createIfMissing(ctx, ctx.get('v1', 'PersistentVolumeClaim', claim.metadata.name), claim);
 * ```
 */
export async function createIfMissing(
  ctx: ReconcileContext<PostgresCluster>,
  existing: KubeObject | undefined,
  desired: KubeObject,
) {
  if (existing) await ctx.applyMetadata(desired, { labels: desired.metadata?.labels });
  else await ctx.create(desired);
}
