/**
 * A clone's source, resolved for one reconcile (backups/restore-source.ts): the PostgresCluster it
 * names and, for a volume repo, that cluster's repo host, a client certificate from its CA, and the
 * NetworkPolicy that lets the clone reach that repo host. Idempotent; only a clone not yet
 * initialised gets the certificate, and only a restoring one the way through.
 */
import { ignoreNotFound } from '@kanri/client';
import type { ReconcileContext } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { names, type RestoreSource } from '../contract/index.js';
import { isCloneRestoring } from './backups/clone-progress.js';
import { type ResolvedSource, resolveCloneSource } from './backups/restore-source.js';
import { ensureSourceClientCertificate } from './backups/tls-certificates.js';
import { cloneSourcePolicy } from './builders/network-policy.js';

export async function resolveClone(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  initialised: boolean,
): Promise<ResolvedSource> {
  const namespace = cluster.metadata?.namespace;
  const sourceName = cluster.spec.dataSource?.postgresCluster?.clusterName;
  const source = sourceName
    ? await ignoreNotFound(ctx.resource.get(sourceName, { namespace, signal: ctx.signal }))
    : undefined;
  const repoHost = sourceName ? ctx.get<Pod>('v1', 'Pod', names.repoHost(sourceName), namespace) : undefined;
  const resolved = resolveCloneSource(cluster, source, repoHost);
  if (!initialised && sourceName && resolved.source?.repoHost) {
    const problem = await ensureSourceClientCertificate(cluster, ctx, sourceName);
    if (problem) return { problem };
  }
  return resolved;
}

/**
 * Applies the clone's way through to its source's repo host (builders/network-policy.ts) while
 * the clone restores (backups/clone-progress.ts), and removes it after: until its restore has
 * succeeded postgres still fetches WAL from the source's archive, and a refused fetch would end
 * its recovery early, without the rest of the source's history.
 */
export async function reconcileCloneSourcePolicy(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  source: RestoreSource | undefined,
  initialised: boolean,
  instancePods: readonly Pod[],
): Promise<void> {
  const policy = isCloneRestoring(source, initialised, instancePods) ? cloneSourcePolicy(cluster, source) : undefined;
  if (policy) {
    await ctx.apply(policy);
    return;
  }
  const name = names.cloneSourcePolicy(cluster.metadata?.name ?? '');
  const namespace = cluster.metadata?.namespace;
  if (ctx.get('networking.k8s.io/v1', 'NetworkPolicy', name, namespace))
    await ctx.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', name, namespace });
}
