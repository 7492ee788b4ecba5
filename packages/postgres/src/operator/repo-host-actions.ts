/**
 * The repo host of a cluster with a volume repo (contract/repo-host.ts): its PVCs, its Pod and
 * the pgBackRest certificates of every Pod. Every action is idempotent.
 */
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { hasVolumeRepo, names } from '../contract/index.js';
import { reconcilePgbackrestTls } from './backups/tls-certificates.js';
import { repoHostPod, repoVolumeClaims } from './builders/repo-host.js';
import { createIfMissing } from './create-if-missing.js';

/**
 * While the spec declares a volume repo (and the cluster is not shut down): creates the repo
 * PVCs and the repo host Pod when missing, and keeps the certificates. Without one, deletes the
 * repo host Pod; the PVCs stay, since they hold the backups (owned by the cluster, they go with
 * it). `pods` and `claims` are the cluster's own, instances included.
 *
 * @example
 * ```ts
 * await reconcileRepoHost(cluster, ctx, pods, claims);
 * ```
 */
export async function reconcileRepoHost(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  pods: readonly Pod[],
  claims: readonly PersistentVolumeClaim[],
): Promise<void> {
  const name = names.repoHost(cluster.metadata?.name ?? '');
  const existing = pods.find((p) => p.metadata?.name === name);
  const volume = hasVolumeRepo(cluster.spec.backups?.pgbackrest);
  if (volume && !cluster.spec.shutdown) {
    for (const claim of repoVolumeClaims(cluster)) {
      const have = claims.find((c) => c.metadata?.name === claim.metadata?.name);
      await createIfMissing(ctx, have, claim as KubeObject);
    }
    // A Pod being deleted is recreated once it is gone (its deletion wakes the controller).
    if (!existing?.metadata?.deletionTimestamp) {
      if (!existing) ctx.log.info({ pod: name }, 'creating the repo host');
      await createIfMissing(ctx, existing, repoHostPod(cluster) as KubeObject);
    }
  } else if (existing && !existing.metadata?.deletionTimestamp) {
    ctx.log.info({ pod: name, shutdown: Boolean(cluster.spec.shutdown) }, 'removing the repo host');
    await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name, namespace: cluster.metadata?.namespace });
  }
  if (volume) await reconcilePgbackrestTls(cluster, ctx, pods);
}
