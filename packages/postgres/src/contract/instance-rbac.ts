/**
 * What the agent may do through the API, as the rules of the instance Role the operator creates
 * (bound to names.instanceServiceAccount(cluster)). Names are pinned wherever Kubernetes allows:
 * `create` and `list` by label cannot be limited to names, and one Role serves every Pod.
 */
// Types only: the agent loads this module, and must not load @kanri/api with it.
import type { ExplainedRule, PolicyRule } from '@kanri/api';
import { BACKUP_PLURAL, GROUP, names, PLURAL } from './names.js';

/** What decides the instance Role's rules beyond the cluster and its users. */
export interface InstanceRoleOptions {
  /**
   * The cluster still has the Secret of every Pod's pgBackRest key (names.pgbackrestTls, from
   * before per-Pod keys), which the agents of that scheme read until the operator retires it.
   */
  readonly sharedPgbackrestTls?: boolean;
  /** `spec.databaseInitSQL.name`: the ConfigMap whose SQL the primary runs once. */
  readonly databaseInitSqlConfigMap?: string;
}

/**
 * The instance Role's rules, each with why the agent needs it (the README's table lists them).
 *
 * @example
 * ```ts
 * for (const rule of explainInstanceRoleRules('pg', ['app'])) console.log(rule.resources[0], rule.verbs.join(), rule.reason);
 * ```
 */
export function explainInstanceRoleRules(
  cluster: string,
  userNames: readonly string[],
  options: InstanceRoleOptions = {},
): ExplainedRule[] {
  const secretNames = [
    ...(options.sharedPgbackrestTls ? [names.pgbackrestTls(cluster)] : []),
    ...userNames.map((user) => names.userSecret(cluster, user)),
  ];
  return [
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['create'],
      reason:
        "the first primary creates its cluster's leader Lease (create cannot be limited to a name; admission can)",
    },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [names.leaderLease(cluster)],
      verbs: ['get', 'list', 'update', 'watch'],
      reason:
        "the leader Lease: read, renewed, released, and followed (list + watch by name) through the agent's cache",
    },
    {
      apiGroups: [''],
      resources: ['pods'],
      verbs: ['get', 'list', 'watch', 'patch'],
      reason:
        "its own Pod (role label, report), the holder's (IP), the cluster's (candidates' addresses); a new primary moves the role label off a dead one (admission narrows the patch)",
    },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [names.config(cluster)],
      verbs: ['list', 'watch'],
      reason: 'follows the configuration the operator renders',
    },
    {
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: [names.postgresTls(cluster)],
      verbs: ['list', 'watch'],
      reason: "follows PostgreSQL's TLS certificates, reloaded when they change",
    },
    {
      apiGroups: [GROUP],
      resources: [PLURAL],
      resourceNames: [cluster],
      verbs: ['list', 'watch'],
      reason: 'follows its PostgresCluster',
    },
    {
      apiGroups: [GROUP],
      resources: [BACKUP_PLURAL],
      verbs: ['get', 'list', 'watch'],
      reason: "the primary runs the cluster's PostgresBackups (selected by label: list cannot be limited to names)",
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
      reason: 'Events explaining failovers, fencing, rewinds and switchovers',
    },
    ...(options.databaseInitSqlConfigMap
      ? [
          {
            apiGroups: [''],
            resources: ['configmaps'],
            resourceNames: [options.databaseInitSqlConfigMap],
            verbs: ['get'],
            reason: 'the SQL of spec.databaseInitSQL, which the primary runs once; only while that field names it',
          },
        ]
      : []),
    // Named, never every Secret: with no name there is no rule (an empty list would mean all).
    ...(secretNames.length > 0
      ? [
          {
            apiGroups: [''],
            resources: ['secrets'],
            resourceNames: secretNames,
            verbs: ['get'],
            reason:
              "the users' passwords (the primary sets them), and while a cluster from before per-Pod pgBackRest keys still has it, the Secret of the older scheme's keys; each Pod's own pgBackRest key is in its run volume, in no Secret; named, never every Secret (the CAs' keys stay with the operator)",
          },
        ]
      : []),
  ];
}

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
export function buildInstanceRoleRules(
  cluster: string,
  userNames: readonly string[],
  options: InstanceRoleOptions = {},
): PolicyRule[] {
  return explainInstanceRoleRules(cluster, userNames, options).map(({ reason: _, ...rule }) => rule);
}

/**
 * What the operator must hold itself to grant every cluster's instance Role (RBAC refuses to grant
 * more than the granter has): the same rules, without the per-cluster names. Derived from
 * {@link explainInstanceRoleRules}, so a rule added for the agent can never be forgotten here.
 *
 * @example
 * ```ts
 * defineOperator({ ..., extraRules: rulesToGrantInstanceRoles() });
 * ```
 */
export function rulesToGrantInstanceRoles(): ExplainedRule[] {
  return explainInstanceRoleRules('any', ['any'], {
    sharedPgbackrestTls: true,
    databaseInitSqlConfigMap: 'any',
  }).map(({ resourceNames: _, reason, ...rule }) => ({
    ...rule,
    reason: `grants it to the instance Role (RBAC lets it grant only what it holds): ${reason}`,
  }));
}
