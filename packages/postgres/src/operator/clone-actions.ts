/**
 * A clone's source, resolved for one reconcile (backups/restore-source.ts): the PostgresCluster it
 * names and, for a volume repo, that cluster's repo host, on which the clone's Pods hold read
 * grants while the clone restores (backups/clone-grant-plan.ts, contract/clone-gateway.ts). The
 * grants go once the clone has restored; the source's side drops those of clones gone
 * (reconcileCloneGrantsOfSource). Idempotent.
 */
import { ignoreNotFound, type KubeObject } from '@kanri/client';
import { certifyPublicKey, type ReconcileContext } from '@kanri/runtime';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
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
  readCloneGrants,
  readPodReport,
} from '../contract/index.js';
import { CLONE_GRANT_HOURS, planCloneGrants, staleCloneGrants } from './backups/clone-grant-plan.js';
import { foreignPathProblem } from './backups/repo-grants.js';
import { foreignRepoPath } from './backups/repo-paths.js';
import { type ResolvedSource, resolveCloneSource } from './backups/restore-source.js';
import { certificateAuthorityProblem, decodeSecretData } from './backups/tls-plan.js';
import { liveSecret } from './tls/certificate-authority.js';

type Context = ReconcileContext<PostgresCluster>;

/** The cluster's instance Pods, from the cache. */
function instancePodsOf(ctx: Context, namespace: string | undefined, cluster: string): Pod[] {
  return ctx
    .list<Pod>('v1', 'Pod', { namespace })
    .filter((p) => p.metadata?.labels?.[LABEL.cluster] === cluster && p.metadata?.labels?.[LABEL.instance]);
}

/**
 * Whether a clone still restores from its source: none of its instances reports its restore
 * succeeded (recovery included: WAL is still fetched from the source until the clone promotes).
 */
export function cloneRestoring(pods: readonly Pod[]): boolean {
  return !pods.some((p) => readPodReport(p)?.restore?.result === 'succeeded');
}

const patchAnnotations = (ctx: Context, pod: Pod, annotations: Record<string, string | null>) =>
  ignoreNotFound(
    ctx.client
      .resource<Pod & KubeObject>('v1', 'Pod')
      .patch(
        pod.metadata?.name ?? '',
        { metadata: { annotations } },
        { namespace: pod.metadata?.namespace, type: 'merge', signal: ctx.signal },
      ),
  );

/** The source's pgBackRest CA, from the cache, else as the API server has it. */
async function sourceCa(ctx: Context, source: string, namespace: string | undefined) {
  const name = names.pgbackrestCa(source);
  let data = decodeSecretData(ctx.get<Secret>('v1', 'Secret', name, namespace)?.data);
  if (certificateAuthorityProblem(data)) data = decodeSecretData((await liveSecret(ctx, name, namespace))?.data);
  if (certificateAuthorityProblem(data)) return undefined;
  return { caCertPem: data[PGBACKREST_CA_KEY.cert] ?? '', caKeyPem: data[PGBACKREST_CA_KEY.key] ?? '' };
}

/** Grants the clone's Pods read access on the source's repo host while it restores, and takes it back after. */
async function reconcileCloneGrants(
  cluster: PostgresCluster,
  ctx: Context,
  repoHost: Pod,
  source: string,
  /** The clone restores from a volume repo of the source (else it needs no grant). */
  throughRepoHost: boolean,
) {
  const clone = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const grants = readCloneGrants(repoHost.metadata?.annotations);
  const pods = instancePodsOf(ctx, namespace, clone);
  const restoring = throughRepoHost && cloneRestoring(pods);
  if (!restoring && ![...grants.values()].some((g) => g.cluster === clone)) return;
  const ca = await sourceCa(ctx, source, namespace);
  if (!ca) return;
  const plan = planCloneGrants({
    clone,
    restoring,
    grants,
    caCertPem: ca.caCertPem,
    pods: pods.map((p) => {
      const key = p.metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY];
      return {
        name: p.metadata?.name ?? '',
        deleting: Boolean(p.metadata?.deletionTimestamp),
        ...(key ? { publicKeyPem: key } : {}),
      };
    }),
  });
  const annotations: Record<string, string | null> = {};
  for (const { pod, publicKeyPem, reason } of plan.issue) {
    ctx.log.info({ pod, source, reason }, "granting a clone Pod read access to its source's volume repo");
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
  await patchAnnotations(ctx, repoHost, annotations);
  if (plan.remove.length > 0 && !restoring)
    await ctx.event(
      'Normal',
      'SourceAccessRevoked',
      `restored: ${names.repoHost(source)} no longer lets ${plan.remove.join(', ')} read its repo`,
    );
}

/**
 * The source's side: drops the grants on its repo host of clones that are gone, have restored, or
 * whose grant ended (a clone deleted mid-restore never takes its own back).
 *
 * @example
 * ```ts
 * if (repoHost) await reconcileCloneGrantsOfSource(cluster, ctx, repoHost);
 * ```
 */
export async function reconcileCloneGrantsOfSource(cluster: PostgresCluster, ctx: Context, repoHost: Pod) {
  const grants = readCloneGrants(repoHost.metadata?.annotations);
  if (grants.size === 0) return;
  const namespace = cluster.metadata?.namespace;
  const clones = new Map(
    [...new Set([...grants.values()].map((g) => g.cluster))].flatMap((name) =>
      ctx.get<PostgresCluster & KubeObject>(API_VERSION, KIND, name, namespace)
        ? [[name, { restoring: cloneRestoring(instancePodsOf(ctx, namespace, name)) }] as const]
        : [],
    ),
  );
  const stale = staleCloneGrants(grants, clones);
  if (stale.length === 0) return;
  ctx.log.info({ pods: stale }, 'dropping clone read grants that no longer hold');
  await patchAnnotations(ctx, repoHost, Object.fromEntries(stale.map((pod) => [`${CLONE_GRANT_PREFIX}${pod}`, null])));
}

/**
 * @example
 * ```ts
 * const clone = cluster.spec.dataSource ? await resolveClone(cluster, ctx) : {};
 * ```
 */
export async function resolveClone(cluster: PostgresCluster, ctx: Context): Promise<ResolvedSource> {
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
  if (sourceName && repoHost && !repoHost.metadata?.deletionTimestamp)
    await reconcileCloneGrants(cluster, ctx, repoHost, sourceName, resolved.source?.gateway !== undefined);
  return resolved;
}
