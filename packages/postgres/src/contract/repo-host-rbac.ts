/**
 * What the repo host's agent may do through the API, as the rules of its own Role (bound to
 * names.repoHostServiceAccount(cluster), never the instances' account): it follows its cluster,
 * backs up the Lease holder and records its PostgresBackups, and publishes its pgBackRest server
 * and key on its own Pod. It holds no database, so it reads no Secret at all: not PostgreSQL's TLS
 * Secret (the server key and the superuser's client key), not the users' passwords.
 */
// Types only: the agent loads this module, and must not load @kanri/api with it.
import type { ExplainedRule, PolicyRule } from '@kanri/api';
import { BACKUP_PLURAL, GROUP, names, PLURAL } from './names.js';

/**
 * The repo host Role's rules, each with why its agent needs it (the README's table lists them).
 *
 * @example
 * ```ts
 * for (const rule of explainRepoHostRoleRules('pg')) console.log(rule.resources[0], rule.verbs.join(), rule.reason);
 * ```
 */
export function explainRepoHostRoleRules(cluster: string): ExplainedRule[] {
  return [
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [names.leaderLease(cluster)],
      verbs: ['get', 'list', 'watch'],
      reason: 'the leader Lease, followed (list + watch by name) and re-read: it backs up the holder; never written',
    },
    {
      apiGroups: [''],
      resources: ['pods'],
      verbs: ['list', 'watch'],
      reason:
        "the cluster's Pods, followed by label (list cannot be limited to names): the primary's address and published pgBackRest server",
    },
    {
      apiGroups: [''],
      resources: ['pods'],
      resourceNames: [names.repoHost(cluster)],
      verbs: ['get', 'patch'],
      reason:
        'its own Pod alone: publishes its pgBackRest server and key there (admission narrows the patch to those two annotations)',
    },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [names.config(cluster)],
      verbs: ['list', 'watch'],
      reason: 'follows the configuration the operator renders',
    },
    {
      apiGroups: [GROUP],
      resources: [PLURAL],
      resourceNames: [cluster],
      verbs: ['list', 'watch'],
      reason: 'follows its PostgresCluster (the repos, the recorded repo paths)',
    },
    {
      apiGroups: [GROUP],
      resources: [BACKUP_PLURAL],
      verbs: ['get', 'list', 'watch'],
      reason:
        "with a volume repo it runs the cluster's PostgresBackups (selected by label: list cannot be limited to names)",
    },
    {
      apiGroups: [GROUP],
      resources: [`${BACKUP_PLURAL}/status`],
      verbs: ['patch'],
      reason:
        "records each backup run in its status; admission narrows it to its own cluster's backups (contract/admission/instance-backup-policy.ts), which RBAC cannot say by label",
    },
    {
      apiGroups: ['events.k8s.io'],
      resources: ['events'],
      verbs: ['create', 'patch'],
      reason: 'Events about the backups it runs',
    },
  ];
}

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
  return explainRepoHostRoleRules(cluster).map(({ reason: _, ...rule }) => rule);
}

/**
 * What the operator must hold itself to grant every cluster's repo host Role (RBAC refuses to grant
 * more than the granter has): the same rules without the per-cluster names, derived from
 * {@link explainRepoHostRoleRules} as contract/instance-rbac.ts derives the instances'.
 *
 * @example
 * ```ts
 * defineOperator({ ..., extraRules: [...rulesToGrantInstanceRoles(), ...rulesToGrantRepoHostRoles()] });
 * ```
 */
export function rulesToGrantRepoHostRoles(): ExplainedRule[] {
  return explainRepoHostRoleRules('any').map(({ resourceNames: _, reason, ...rule }) => ({
    ...rule,
    reason: `grants it to the repo host Role (RBAC lets it grant only what it holds): ${reason}`,
  }));
}
