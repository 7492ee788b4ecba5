/**
 * A clone's source, resolved for one reconcile (backups/restore-source.ts): the PostgresCluster it
 * names and, for a volume repo, that cluster's repo host and a client certificate from its CA.
 * Idempotent; only a clone not yet initialised gets the certificate.
 */
import { ignoreNotFound } from '@kanri/client';
import type { ReconcileContext } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { names } from '../contract/index.js';
import { type ResolvedSource, resolveCloneSource } from './backups/restore-source.js';
import { ensureSourceClientCertificate } from './backups/tls-certificates.js';

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
