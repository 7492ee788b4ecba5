/**
 * The repo host of a cluster with a volume repo (contract/repo-host.ts): its PVCs, its own
 * ServiceAccount and Role, its Pod and the pgBackRest certificates of every Pod. Every action is
 * idempotent.
 */
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { hasVolumeRepo, names } from '../../contract/index.js';
import { REPO_HOST_SPEC_ANNOTATION, repoHostPod, repoHostRbac, repoVolumeClaims } from '../builders/repo-host.js';
import { createIfMissing } from '../create-if-missing.js';
import type { StepOutcome } from '../step-outcome.js';
import { reconcileCloneGrantsOfSource } from './clone-actions.js';
import { reconcilePgbackrestTls } from './tls-certificates.js';

/**
 * While the spec declares a volume repo (and the cluster is not shut down): creates the repo
 * PVCs and the repo host Pod when missing, replaces the Pod when the spec it was built from
 * changed, and keeps the certificates. Without one, deletes the
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
): Promise<StepOutcome> {
  const name = names.repoHost(cluster.metadata?.name ?? '');
  const existing = pods.find((p) => p.metadata?.name === name);
  const volume = hasVolumeRepo(cluster.spec.backups?.pgbackrest);
  if (volume && !cluster.spec.shutdown) {
    for (const claim of repoVolumeClaims(cluster)) {
      const have = claims.find((c) => c.metadata?.name === claim.metadata?.name);
      await createIfMissing(ctx, have, claim as KubeObject);
    }
    // Before the Pod: a Pod naming a ServiceAccount that does not exist yet is refused.
    for (const object of repoHostRbac(cluster)) await ctx.apply(object as KubeObject);
    const desired = repoHostPod(cluster);
    const digest = (pod: Pod | undefined) => pod?.metadata?.annotations?.[REPO_HOST_SPEC_ANNOTATION];
    if (existing?.metadata?.deletionTimestamp) {
      // Recreated once it is gone (its deletion wakes the controller).
    } else if (existing && digest(existing) !== digest(desired)) {
      // Its mounts or image are out of date, and a Pod's cannot change: replaced. Nothing is
      // lost (the repos are on their PVCs); a backup running on it fails and can be taken again.
      ctx.log.info({ pod: name }, 'the repo host is out of date with the spec: replacing it');
      await ctx.event('Normal', 'RepoHostReplaced', `replacing ${name}: its volumes, configuration or image changed`);
      await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name, namespace: cluster.metadata?.namespace });
    } else {
      if (!existing) {
        ctx.log.info({ pod: name }, 'creating the repo host');
        const image = cluster.spec.backups?.pgbackrest?.image;
        if (image)
          await ctx.event(
            'Warning',
            'PgBackRestImageIgnored',
            `spec.backups.pgbackrest.image (${image}) is not used: the repo host runs ${desired.spec?.containers?.[0]?.image}, which carries pgBackRest`,
          );
      }
      await createIfMissing(ctx, existing, desired as KubeObject);
    }
  } else if (existing && !existing.metadata?.deletionTimestamp) {
    ctx.log.info({ pod: name, shutdown: Boolean(cluster.spec.shutdown) }, 'removing the repo host');
    await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name, namespace: cluster.metadata?.namespace });
  }
  if (volume) await reconcilePgbackrestTls(cluster, ctx, pods);
  if (existing && !existing.metadata?.deletionTimestamp) await reconcileCloneGrantsOfSource(cluster, ctx, existing);
  return {};
}
