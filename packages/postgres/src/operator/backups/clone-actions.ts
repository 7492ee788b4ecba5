/**
 * A clone's source, resolved for one reconcile (backups/restore-source.ts): the PostgresCluster it
 * names and, for a volume repo, that cluster's repo host, whose clone port the clone's Pods read
 * through once granted. The grants are the source's to give (reconcileCloneGrantsOfSource): the
 * source's own reconcile writes them on its own repo host Pod, for the clones that name it, from
 * its own CA, while they restore, and removes them after. A clone's reconcile only reads its
 * source, and owns the NetworkPolicy that opens the source's clone port to it while it restores;
 * it writes nothing another cluster owns. Idempotent.
 */
import { ignoreNotFound, type KubeObject } from '@kanri/client';
import { certifyPublicKey, type ReconcileContext } from '@kanri/runtime';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  ANNOTATION_PGBACKREST_KEY,
  API_VERSION,
  CLONE_COMMON_NAME,
  CLONE_GRANT_PREFIX,
  type CloneGrant,
  KIND,
  LABEL,
  names,
  PGBACKREST_CA_KEY,
  type RestoreSource,
  readCloneGrants,
} from '../../contract/index.js';
import { cloneSourcePolicy } from '../builders/network-policy.js';
import { isInitialised } from '../cluster-status.js';
import type { StepOutcome } from '../step-outcome.js';
import { liveSecret } from '../tls/certificate-authority.js';
import { certificateAuthorityProblem, decodeSecretData } from '../tls/certificate-checks.js';
import { CLONE_GRANT_HOURS, type CloneOfSource, planSourceGrants } from './clone-grant-plan.js';
import { isCloneRestoring } from './clone-progress.js';
import { foreignPathProblem } from './repo-grants.js';
import { foreignRepoPath } from './repo-paths.js';
import { type ResolvedSource, resolveCloneSource } from './restore-source.js';

type Context = ReconcileContext<PostgresCluster>;

/** The cluster's instance Pods, from the cache. */
function instancePodsOf(ctx: Context, namespace: string | undefined, cluster: string): Pod[] {
  return ctx
    .list<Pod>('v1', 'Pod', { namespace })
    .filter((p) => p.metadata?.labels?.[LABEL.cluster] === cluster && p.metadata?.labels?.[LABEL.instance]);
}

/** This cluster's own pgBackRest CA, from the cache, else as the API server has it. */
async function ownCa(ctx: Context, cluster: string, namespace: string | undefined) {
  const name = names.pgbackrestCa(cluster);
  let data = decodeSecretData(ctx.get<Secret>('v1', 'Secret', name, namespace)?.data);
  if (certificateAuthorityProblem(data)) data = decodeSecretData((await liveSecret(ctx, name, namespace))?.data);
  if (certificateAuthorityProblem(data)) return undefined;
  return { caCertPem: data[PGBACKREST_CA_KEY.cert] ?? '', caKeyPem: data[PGBACKREST_CA_KEY.key] ?? '' };
}

/**
 * The clusters of the source's namespace that name it in `spec.dataSource.postgresCluster`, each
 * with whether it still restores from a volume repo of the source (through the repo host), and
 * its Pods' published keys.
 */
function clonesOf(source: PostgresCluster, ctx: Context): CloneOfSource[] {
  const namespace = source.metadata?.namespace;
  const repos = source.spec.backups?.pgbackrest?.repos ?? [];
  return ctx.list<PostgresCluster & KubeObject>(API_VERSION, KIND, { namespace }).flatMap((cluster) => {
    const from = cluster.spec?.dataSource?.postgresCluster;
    if (from?.clusterName !== source.metadata?.name) return [];
    const clone = cluster.metadata?.name ?? '';
    const pods = instancePodsOf(ctx, namespace, clone);
    const throughRepoHost = repos.some((r) => r.name === from?.repoName && r.volume);
    return [
      {
        clone,
        restoring:
          throughRepoHost &&
          !cluster.metadata?.deletionTimestamp &&
          isCloneRestoring(isInitialised(cluster, pods), pods),
        pods: pods.map((p) => {
          const key = p.metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY];
          return {
            name: p.metadata?.name ?? '',
            deleting: Boolean(p.metadata?.deletionTimestamp),
            ...(key ? { publicKeyPem: key } : {}),
          };
        }),
      },
    ];
  });
}

/**
 * The source's side of clone grants, on its own repo host Pod: each clone that names it gets its
 * restoring Pods granted read access on the clone port (an hour, from this cluster's own CA,
 * renewed while the restore lasts); grants of clones that have restored, are gone, or no longer
 * name it are removed. Nothing of the clone is written, and no clone writes here.
 *
 * @example
 * ```ts
 * if (repoHost) await reconcileCloneGrantsOfSource(cluster, ctx, repoHost);
 * ```
 */
export async function reconcileCloneGrantsOfSource(cluster: PostgresCluster, ctx: Context, repoHost: Pod) {
  const source = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const grants = readCloneGrants(repoHost.metadata?.annotations);
  const clones = clonesOf(cluster, ctx);
  if (grants.size === 0 && !clones.some((c) => c.restoring)) return;
  const ca = await ownCa(ctx, source, namespace);
  if (!ca) return;
  const plan = planSourceGrants({ grants, clones, caCertPem: ca.caCertPem });
  const annotations: Record<string, string | null> = {};
  for (const { pod, publicKeyPem, reason } of plan.issue) {
    const clone = clones.find((c) => c.pods.some((p) => p.name === pod))?.clone ?? '';
    ctx.log.info({ pod, clone, reason }, 'granting a clone Pod read access to this volume repo');
    const certificate = await certifyPublicKey({
      publicKeyPem,
      commonName: CLONE_COMMON_NAME,
      dnsNames: [pod],
      ca,
      validityDays: CLONE_GRANT_HOURS / 24,
    });
    annotations[`${CLONE_GRANT_PREFIX}${pod}`] = JSON.stringify({ cluster: clone, certificate } satisfies CloneGrant);
  }
  for (const pod of plan.remove) annotations[`${CLONE_GRANT_PREFIX}${pod}`] = null;
  if (Object.keys(annotations).length === 0) return;
  await ignoreNotFound(
    ctx.client
      .resource<Pod & KubeObject>('v1', 'Pod')
      .patch(
        repoHost.metadata?.name ?? '',
        { metadata: { annotations } },
        { namespace, type: 'merge', signal: ctx.signal },
      ),
  );
  for (const clone of new Set(plan.remove.map((pod) => grants.get(pod)?.cluster ?? ''))) {
    const pods = plan.remove.filter((pod) => grants.get(pod)?.cluster === clone);
    const still = clones.find((c) => c.clone === clone);
    const why = still?.restoring
      ? 'its Pods are gone or their grants ended'
      : still
        ? 'it has restored'
        : `it is gone, or no longer clones ${source}`;
    await ctx.event(
      'Normal',
      'SourceAccessRevoked',
      `${names.repoHost(source)} no longer lets ${pods.join(', ')} of ${clone} read its repo: ${why}`,
    );
  }
}

/**
 * @example
 * ```ts
 * const clone = cluster.spec.dataSource ? await resolveClone(cluster, ctx) : {};
 * ```
 */
export async function resolveClone(cluster: PostgresCluster, ctx: Context): Promise<StepOutcome & ResolvedSource> {
  const namespace = cluster.metadata?.namespace;
  const sourceName = cluster.spec.dataSource?.postgresCluster?.clusterName;
  const source = sourceName
    ? await ignoreNotFound(ctx.resource.get(sourceName, { namespace, signal: ctx.signal }))
    : undefined;
  const repoHost = sourceName ? ctx.get<Pod>('v1', 'Pod', names.repoHost(sourceName), namespace) : undefined;
  const resolved = resolveCloneSource(cluster, source, repoHost);
  // A repo path in another namespace's part of the tree: only with its owner's grant (issue 37, finding 12).
  const foreign = resolved.source?.repoPath ? foreignRepoPath(resolved.source.repoPath, namespace ?? '') : undefined;
  const refused =
    foreign &&
    foreignPathProblem(ctx, 'spec.dataSource.pgbackrest', resolved.source?.repoPath ?? '', foreign, {
      namespace: namespace ?? '',
      name: cluster.metadata?.name ?? '',
    });
  if (refused) return { problem: refused, grantMissing: true };
  // Before clone grants, a clone kept a year-long certificate of its source's, key included, in a
  // Secret: no longer read by anything, and not to be left lying around.
  const legacy = ctx.get<Secret>('v1', 'Secret', names.pgbackrestSourceTls(cluster.metadata?.name ?? ''), namespace);
  if (legacy?.metadata?.ownerReferences?.some((r) => r.uid === cluster.metadata?.uid)) {
    ctx.log.info({ secret: legacy.metadata?.name }, "deleting the clone's old source certificate Secret");
    await ctx.delete({ apiVersion: 'v1', kind: 'Secret', name: legacy.metadata?.name ?? '', namespace });
  }
  return resolved;
}

/**
 * Applies the clone's way through to its source's repo host's clone port
 * (builders/network-policy.ts) while the clone restores (backups/clone-progress.ts, the predicate
 * the source's grants follow too), and removes it after: until its restore has succeeded postgres
 * still fetches WAL from the source's archive, and a refused fetch would end its recovery early,
 * without the rest of the source's history.
 *
 * @example
 * ```ts
 * await reconcileCloneSourcePolicy(cluster, ctx, clone.source, initialised, instancePods);
 * ```
 */
export async function reconcileCloneSourcePolicy(
  cluster: PostgresCluster,
  ctx: Context,
  source: RestoreSource | undefined,
  initialised: boolean,
  instancePods: readonly Pod[],
): Promise<StepOutcome> {
  const restoring = source !== undefined && isCloneRestoring(initialised, instancePods);
  const policy = restoring ? cloneSourcePolicy(cluster, source) : undefined;
  if (policy) {
    await ctx.apply(policy);
    return {};
  }
  const name = names.cloneSourcePolicy(cluster.metadata?.name ?? '');
  const namespace = cluster.metadata?.namespace;
  if (ctx.get('networking.k8s.io/v1', 'NetworkPolicy', name, namespace))
    await ctx.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', name, namespace });
  return {};
}

/**
 * Warns (log and Event) why a cluster not initialised yet cannot clone its data source.
 *
 * @example
 * ```ts
 * await reportDataSourceProblem(ctx, initialised, clone.problem);
 * ```
 */
export async function reportDataSourceProblem(
  ctx: Context,
  initialised: boolean,
  problem: string | undefined,
): Promise<StepOutcome> {
  if (!initialised && problem) {
    ctx.log.warn({ problem }, 'cannot clone yet');
    await ctx.event('Warning', 'DataSourceNotReady', problem);
  }
  return {};
}
