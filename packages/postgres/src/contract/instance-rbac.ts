/**
 * What the agent may do through the API, as the rules of the instance Role the operator creates
 * (bound to names.instanceServiceAccount(cluster)). Names are pinned wherever Kubernetes allows:
 * `create` and `list` by label cannot be limited to names, and one Role serves every Pod.
 */
import type { PolicyRule } from '@kanri/api';
import { BACKUP_PLURAL, GROUP, names, PLURAL } from './names.js';

/**
 * @example
 * ```ts
 * const role = {
 *   apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role',
 *   metadata: { name: names.instanceServiceAccount('pg'), namespace: 'db' },
 *   rules: buildInstanceRoleRules('pg', ['app']),
 * };
 * ```
 */
export function buildInstanceRoleRules(cluster: string, userNames: readonly string[]): PolicyRule[] {
  const rules: PolicyRule[] = [
    // The leader Lease: created once by the first primary, then read, renewed, released, and
    // followed (list + watch by name) through the agent's cache.
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [names.leaderLease(cluster)],
      verbs: ['get', 'list', 'update', 'watch'],
    },
    // Its own Pod (label and report), the holder's Pod (IP), the cluster's Pods (one slot each, the
    // candidates' addresses), followed through the agent's cache; a new primary moves the role
    // label off a dead primary's Pod.
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
    // The configuration, PostgreSQL's TLS Secret and the cluster object, followed by list + watch on their names.
    { apiGroups: [''], resources: ['configmaps'], resourceNames: [names.config(cluster)], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: [names.postgresTls(cluster)], verbs: ['list', 'watch'] },
    { apiGroups: [GROUP], resources: [PLURAL], resourceNames: [cluster], verbs: ['list', 'watch'] },
    // The primary runs the cluster's PostgresBackups (selected by label: list cannot be limited to
    // names) and records each run in its status; admission narrows the status to its own
    // cluster's backups (instance-backup-policy.ts), which RBAC cannot say by label.
    { apiGroups: [GROUP], resources: [BACKUP_PLURAL], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [GROUP], resources: [`${BACKUP_PLURAL}/status`], verbs: ['patch'] },
    // Events explaining failovers, fencing, rewinds and switchovers (repeats patch the series).
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    // The users' Secrets (the primary sets their passwords) and the Pods' pgBackRest certificates,
    // issued by the operator once each Pod has its IP (the CA's key stays in a Secret only the
    // operator reads). Named, never every Secret.
    {
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: [
        names.pgbackrestTls(cluster),
        names.pgbackrestSourceTls(cluster),
        ...userNames.map((user) => names.userSecret(cluster, user)),
      ],
      verbs: ['get'],
    },
  ];
  return rules;
}

/**
 * What the operator must hold itself to grant every cluster's instance Role (RBAC refuses to grant
 * more than the granter has): the same rules, without the per-cluster names. Derived from
 * {@link buildInstanceRoleRules}, so a rule added for the agent can never be forgotten here.
 *
 * @example
 * ```ts
 * defineOperator({ ..., extraRules: rulesToGrantInstanceRoles() });
 * ```
 */
export function rulesToGrantInstanceRoles(): PolicyRule[] {
  return buildInstanceRoleRules('any', ['any']).map(({ resourceNames: _, ...rule }) => rule);
}
