/**
 * The objects every instance of a cluster serves with, applied at each reconcile: its Secrets,
 * its configuration, the instances' RBAC, its Services, PodDisruptionBudget and NetworkPolicy.
 * Each is applied whole, so a deleted one comes back; what an initialised cluster lost is news.
 * And the Secrets of users the spec no longer has, deleted once their role is gone.
 */
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { names, type RestoreSource } from '../contract/index.js';
import { hasSharedPgbackrestTls } from './backups/tls-certificates.js';
import { disruptionBudget } from './builders/disruption-budget.js';
import { instanceRbac } from './builders/instance-rbac.js';
import { networkPolicy } from './builders/network-policy.js';
import { postgresConfig } from './builders/postgres-config.js';
import { secrets } from './builders/secrets.js';
import { services } from './builders/services.js';
import { isMissing } from './create-if-missing.js';
import { readCredentials } from './credentials.js';
import { primaryUsersReport, userSecretsToDelete } from './removed-users.js';
import type { StepOutcome } from './step-outcome.js';

type Context = ReconcileContext<PostgresCluster>;

/**
 * Applies the cluster's Secrets (credentials.ts keeps the passwords they had).
 *
 * @example
 * ```ts
 * await applyClusterSecrets(cluster, ctx);
 * ```
 */
export async function applyClusterSecrets(cluster: PostgresCluster, ctx: Context): Promise<StepOutcome> {
  for (const secret of secrets(cluster, await readCredentials(cluster, ctx))) await ctx.apply(secret);
  return {};
}

/**
 * Applies the configuration (with the source a restore or clone reads), the instances' RBAC, the
 * Services, the PodDisruptionBudget and the NetworkPolicy; resolves the configuration's name in
 * `missing` when an initialised cluster had lost it.
 *
 * @example
 * ```ts
 * const { missing } = await applyClusterObjects(cluster, ctx, { initialised, source: clone.source });
 * ```
 */
export async function applyClusterObjects(
  cluster: PostgresCluster,
  ctx: Context,
  { initialised, source }: { readonly initialised: boolean; readonly source: RestoreSource | undefined },
): Promise<StepOutcome & { readonly missing: readonly string[] }> {
  const config = names.config(cluster.metadata?.name ?? '');
  const configMissing = initialised && (await isMissing(ctx, 'ConfigMap', config, cluster.metadata?.namespace));
  await ctx.apply(postgresConfig(cluster, source));
  // The older scheme's shared pgBackRest Secret stays readable while it exists (its agents read it).
  const sharedPgbackrestTls = hasSharedPgbackrestTls(cluster, ctx);
  for (const object of instanceRbac(cluster, { sharedPgbackrestTls })) await ctx.apply(object as KubeObject);
  for (const service of services(cluster)) await ctx.apply(service);
  await ctx.apply(disruptionBudget(cluster));
  await ctx.apply(networkPolicy(cluster));
  return { missing: configMissing ? [config] : [] };
}

/**
 * Warns (log and Event) of each object the instances serve with that this pass found missing and
 * created anew.
 *
 * @example
 * ```ts
 * await reportRecreated(ctx, [...objects.missing, ...(tls.missing ?? [])]);
 * ```
 */
export async function reportRecreated(ctx: Context, recreated: readonly string[]): Promise<StepOutcome> {
  for (const name of recreated) {
    ctx.log.warn({ object: name }, 'the cluster lost an object its instances serve with; created it anew');
    await ctx.event(
      'Warning',
      'SecurityMaterialRecreated',
      `${name} did not exist: created it anew (the instances keep what they serve until they have it)`,
    );
  }
  return {};
}

/**
 * Deletes the Secrets of users removed from the spec once the primary no longer keeps their role
 * (removed-users.ts).
 *
 * @example
 * ```ts
 * await deleteRemovedUserSecrets(cluster, ctx, instancePods, observed.primary);
 * ```
 */
export async function deleteRemovedUserSecrets(
  cluster: PostgresCluster,
  ctx: Context,
  instancePods: readonly Pod[],
  primary: string | undefined,
): Promise<StepOutcome> {
  const namespace = cluster.metadata?.namespace;
  const ownedSecrets = ctx.list<Secret>('v1', 'Secret', { namespace, ownedBy: cluster });
  for (const name of userSecretsToDelete(cluster, ownedSecrets, primaryUsersReport(instancePods, primary)))
    await ctx.delete({ apiVersion: 'v1', kind: 'Secret', name, namespace });
  return {};
}
