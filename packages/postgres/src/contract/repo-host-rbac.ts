/**
 * What the repo host's agent may do through the API, as the rules of its own Role (bound to
 * names.repoHostServiceAccount(cluster), never the instances' account): it follows its cluster,
 * backs up the Lease holder and records its PostgresBackups, and publishes its pgBackRest server
 * and key on its own Pod. It holds no database, so it reads no Secret at all: not PostgreSQL's TLS
 * Secret (the server key and the superuser's client key), not the users' passwords.
 */
import type { PolicyRule } from '@kanri/api';
import { BACKUP_PLURAL, GROUP, names, PLURAL } from './names.js';

/**
 * @example
 * ```ts
 * const role = {
 *   apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role',
 *   metadata: { name: names.repoHostServiceAccount('pg'), namespace: 'db' },
 *   rules: buildRepoHostRoleRules('pg'),
 * };
 * ```
 */
export function buildRepoHostRoleRules(cluster: string): PolicyRule[] {
  return [
    // The leader Lease, followed (list + watch by name) and re-read: the repo host backs up its holder.
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [names.leaderLease(cluster)],
      verbs: ['get', 'list', 'watch'],
    },
    // The cluster's Pods, followed by label (list cannot be limited to names): the primary's address
    // and published server. Its own Pod alone is written: its pgBackRest server and key annotations.
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['pods'], resourceNames: [names.repoHost(cluster)], verbs: ['get', 'patch'] },
    // The spec and the configuration, followed by list + watch on their names.
    { apiGroups: [''], resources: ['configmaps'], resourceNames: [names.config(cluster)], verbs: ['list', 'watch'] },
    { apiGroups: [GROUP], resources: [PLURAL], resourceNames: [cluster], verbs: ['list', 'watch'] },
    // With a volume repo the repo host runs the cluster's PostgresBackups (selected by label) and
    // records each run in its status.
    { apiGroups: [GROUP], resources: [BACKUP_PLURAL], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [GROUP], resources: [`${BACKUP_PLURAL}/status`], verbs: ['patch'] },
    // Events about the backups it runs.
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ];
}

/**
 * What the operator must hold itself to grant every cluster's repo host Role (RBAC refuses to grant
 * more than the granter has): the same rules without the per-cluster names, derived from
 * {@link buildRepoHostRoleRules} as contract/instance-rbac.ts derives the instances'.
 *
 * @example
 * ```ts
 * defineOperator({ ..., extraRules: [...rulesToGrantInstanceRoles(), ...rulesToGrantRepoHostRoles()] });
 * ```
 */
export function rulesToGrantRepoHostRoles(): PolicyRule[] {
  return buildRepoHostRoleRules('any').map(({ resourceNames: _, ...rule }) => rule);
}
