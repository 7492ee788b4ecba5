/**
 * What the instance agents may do: exactly their cluster's objects in their namespace. Pure.
 * Secrets are readable by name only, so an instance cannot read other applications' Secrets.
 */
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { GROUP, names, PLURAL } from '../../contract.js';
import { clusterLabels } from './labels.js';
import { secretNames } from './secrets.js';

export function instanceRbac(cluster: PostgresCluster): Record<string, unknown>[] {
  const c = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const name = names.instanceServiceAccount(c);
  const metadata = { name, namespace, labels: clusterLabels(c) };
  const rules = [
    { apiGroups: [GROUP], resources: [PLURAL], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
    {
      apiGroups: [''],
      resources: ['secrets'],
      verbs: ['get'],
      resourceNames: secretNames(cluster).map((s) => s.name),
    },
    // `create` cannot be limited by name; the rest can.
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ];
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
