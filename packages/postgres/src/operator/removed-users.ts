/**
 * The Secrets of users removed from `spec.users`. With `userRemovalPolicy: Drop` the primary's
 * agent drops a removed user's role once it owns no database (agent/plan/users/removed-users-plan.ts);
 * the operator then deletes the user's Secret, and only then: a Secret is deleted once the
 * primary has reported a pass over this generation of the spec that no longer keeps the role, so
 * a role that outlives its removal (it still owns a database) keeps its password. Pure.
 */
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { effectiveUsers, LABEL, type UsersReport } from '../contract/index.js';
import { readReport } from './cluster-status.js';

/** The last pass over `spec.users` reported by `primary` (the status's primary), if it reported one. */
export function primaryUsersReport(pods: readonly Pod[], primary: string | undefined): UsersReport | undefined {
  const pod = primary ? pods.find((p) => p.metadata?.name === primary) : undefined;
  return pod ? readReport(pod)?.users : undefined;
}

/**
 * The names of the user Secrets to delete now.
 *
 * @example
 * ```ts
 * for (const name of userSecretsToDelete(cluster, secrets, primaryUsersReport(pods, status.primary))) await ctx.delete({ apiVersion: 'v1', kind: 'Secret', name, namespace });
 * ```
 */
export function userSecretsToDelete(
  cluster: PostgresCluster,
  secrets: readonly Secret[],
  users: UsersReport | undefined,
): string[] {
  if (cluster.spec.userRemovalPolicy !== 'Drop' || !users) return [];
  // A pass over an older spec may not have dropped (or kept) what this one removed.
  if (users.generation < (cluster.metadata?.generation ?? Number.POSITIVE_INFINITY)) return [];
  const declared = new Set(effectiveUsers(cluster.spec.users, cluster.metadata?.name ?? '').map((user) => user.name));
  const kept = new Set(users.removed.map((user) => user.name));
  return secrets.flatMap((secret) => {
    const user = secret.metadata?.labels?.[LABEL.user];
    const name = secret.metadata?.name;
    return user && name && !declared.has(user) && !kept.has(user) && !secret.metadata?.deletionTimestamp ? [name] : [];
  });
}
