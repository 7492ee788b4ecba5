/**
 * The instance agents' ServiceAccount, Role and RoleBinding: exactly their cluster's objects in
 * their namespace, by name wherever Kubernetes allows (see buildInstanceRoleRules). Pure.
 */

import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { buildInstanceRoleRules, effectiveUsers, names } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

export function instanceRbac(
  cluster: PostgresCluster,
  options: Parameters<typeof buildInstanceRoleRules>[2] = {},
): Record<string, unknown>[] {
  const c = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const name = names.instanceServiceAccount(c);
  const metadata = { name, namespace, labels: clusterLabels(c) };
  const rules = buildInstanceRoleRules(
    c,
    effectiveUsers(cluster.spec.users, c).map((u) => u.name),
    { ...options, databaseInitSqlConfigMap: cluster.spec.databaseInitSQL?.name },
  );
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata, rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ];
}
