/**
 * Which Secrets a cluster may use through the fields of its spec that name one (`spec.tls`'s, and
 * each `configuration[].secret`, its data source's included). Whoever may create a PostgresCluster
 * names them, and may not be allowed to read them: a Secret is used (copied into the cluster's
 * Secrets, or projected into its Pods) only when it consents, by the annotation
 * {@link ALLOWED_CLUSTERS_ANNOTATION} naming the cluster, or is the cluster's own (ownership.ts).
 * Pure.
 */
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { ANNOTATION } from '../contract/index.js';
import { foreignOwner } from './ownership.js';

/** On a Secret: the PostgresClusters of its namespace that may use it, comma-separated, or `*` for all. */
export const ALLOWED_CLUSTERS_ANNOTATION = ANNOTATION.allowedClusters;

export const SECRETS_REFUSED_CONDITION = 'SecretsRefused';

/** A field of a spec that names a Secret. */
export interface SecretReference {
  /** The field, e.g. `spec.backups.pgbackrest.configuration[0].secret`. */
  readonly field: string;
  readonly secret: string;
}

export interface RefusedSecret extends SecretReference {
  readonly why: string;
}

interface Projection {
  readonly secret?: { readonly name: string } | undefined;
}

const projected = (field: string, sources: readonly Projection[] | undefined): SecretReference[] =>
  (sources ?? []).flatMap((s, i) => (s.secret ? [{ field: `${field}[${i}].secret`, secret: s.secret.name }] : []));

/**
 * Every Secret the cluster's spec names, and the ones its clone source's configuration names
 * (projected into the clone's first Pod).
 *
 * @example
 * ```ts
 * secretReferences(cluster); // [{ field: 'spec.tls.serverSecret', secret: 'hippo-tls' }, …]
 * ```
 */
export function secretReferences(cluster: PostgresCluster, cloneSource?: PostgresCluster): SecretReference[] {
  const spec = cluster.spec;
  const tls = spec.tls;
  return [
    ...(tls?.serverSecret ? [{ field: 'spec.tls.serverSecret', secret: tls.serverSecret }] : []),
    ...(tls?.replicationSecret ? [{ field: 'spec.tls.replicationSecret', secret: tls.replicationSecret }] : []),
    ...projected('spec.backups.pgbackrest.configuration', spec.backups?.pgbackrest?.configuration),
    ...projected('spec.dataSource.pgbackrest.configuration', spec.dataSource?.pgbackrest?.configuration),
    ...projected(
      `spec.dataSource.postgresCluster (PostgresCluster ${cloneSource?.metadata?.name}'s spec.backups.pgbackrest.configuration)`,
      cloneSource?.spec.backups?.pgbackrest?.configuration,
    ),
  ];
}

/**
 * Why a clone may not restore yet for want of a Secret its data source names (refused or
 * missing), or undefined: its first Pod would otherwise start without the repo's credentials and
 * fail with pgBackRest's "requires option" instead of the reason.
 *
 * @example
 * ```ts
 * dataSourceRefusal([{ field: 'spec.dataSource.pgbackrest.configuration', secret: 's3', why: 'Secret s3 does not allow …' }]);
 * // 'spec.dataSource.pgbackrest.configuration: Secret s3 does not allow …'
 * ```
 */
export function dataSourceRefusal(refused: readonly RefusedSecret[]): string | undefined {
  const first = refused.find((r) => r.field.startsWith('spec.dataSource'));
  return first && `${first.field}: ${first.why}`;
}

/**
 * Why `cluster` may not use `secret` (named `name`), or undefined when it may.
 *
 * @example
 * ```ts
 * secretConsentProblem('s3', { metadata: { annotations: { [ALLOWED_CLUSTERS_ANNOTATION]: 'hippo, other' } } }, hippo); // undefined
 * ```
 */
export function secretConsentProblem(
  name: string,
  secret: Pick<Secret, 'metadata'> | undefined,
  cluster: PostgresCluster,
): string | undefined {
  const clusterName = cluster.metadata?.name ?? '';
  const optIn = `annotate it ${ALLOWED_CLUSTERS_ANNOTATION}=${clusterName} (a comma-separated list of the PostgresClusters that may use it, or *)`;
  if (!secret) return `Secret ${name} does not exist: create it, and ${optIn}`;
  const allowed = (secret.metadata?.annotations?.[ALLOWED_CLUSTERS_ANNOTATION] ?? '').split(',').map((c) => c.trim());
  if (allowed.includes(clusterName) || allowed.includes('*')) return undefined;
  if (secret.metadata?.ownerReferences?.some((r) => r.controller) && foreignOwner(secret, cluster) === undefined)
    return undefined;
  return `Secret ${name} does not allow PostgresCluster ${clusterName} to use it: ${optIn}`;
}

/**
 * The references the Secrets found (`undefined`: does not exist) allow, and those they refuse.
 *
 * @example
 * ```ts
 * const { allowed, refused } = planSecretConsent(cluster, secretReferences(cluster), found);
 * ```
 */
export function planSecretConsent(
  cluster: PostgresCluster,
  references: readonly SecretReference[],
  found: ReadonlyMap<string, Pick<Secret, 'metadata'> | undefined>,
): { allowed: Set<string>; refused: RefusedSecret[] } {
  const allowed = new Set<string>();
  const refused: RefusedSecret[] = [];
  for (const reference of references) {
    const why = secretConsentProblem(reference.secret, found.get(reference.secret), cluster);
    if (why) refused.push({ ...reference, why });
    else allowed.add(reference.secret);
  }
  return { allowed, refused };
}

/**
 * `sources` (a projected volume's) without a Secret that is not in `allowed`: one that does not
 * consent is never mounted, and one that does not exist yet would be mounted (unasked) once made.
 */
export function consentedProjections<S>(sources: readonly S[], allowed: ReadonlySet<string>): S[] {
  return sources.filter((s) => {
    const secret = (s as Projection | undefined)?.secret;
    return !secret || allowed.has(secret.name);
  });
}

/**
 * `cluster` as its Pods are built from it: its `configuration` lists hold only allowed Secrets.
 * `spec.tls`'s stay: the operator reads those itself, only when they consent (tls/postgres-tls.ts),
 * and keeps what is served otherwise.
 *
 * @example
 * ```ts
 * instancePod({ cluster: withConsentedSecrets(cluster, allowed), … });
 * ```
 */
export function withConsentedSecrets(cluster: PostgresCluster, allowed: ReadonlySet<string>): PostgresCluster {
  const spec = cluster.spec;
  const backups = spec.backups?.pgbackrest;
  const source = spec.dataSource?.pgbackrest;
  return {
    ...cluster,
    spec: {
      ...spec,
      ...(backups?.configuration
        ? {
            backups: {
              ...spec.backups,
              pgbackrest: { ...backups, configuration: consentedProjections(backups.configuration, allowed) },
            },
          }
        : {}),
      ...(source?.configuration
        ? {
            dataSource: {
              ...spec.dataSource,
              pgbackrest: { ...source, configuration: consentedProjections(source.configuration, allowed) },
            },
          }
        : {}),
    },
  } as PostgresCluster;
}
