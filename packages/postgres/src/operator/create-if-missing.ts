import { ignoreNotFound } from '@kanri/client';
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

/**
 * Whether the object is missing from the cache and from the API server both (the cache may lag a
 * create of this controller's own). A read error rejects: an object is never taken for deleted
 * because the API server did not answer.
 *
 * @example
 * ```ts
 * if (await isMissing(ctx, 'ConfigMap', names.config(cluster), namespace)) await ctx.event('Warning', '…', '…');
 * ```
 */
export async function isMissing(
  ctx: ReconcileContext<PostgresCluster>,
  kind: 'ConfigMap' | 'Secret',
  name: string,
  namespace: string | undefined,
): Promise<boolean> {
  if (ctx.get('v1', kind, name, namespace)) return false;
  return (
    (await ignoreNotFound(ctx.client.resource('v1', kind).get(name, { namespace, signal: ctx.signal }))) === undefined
  );
}
