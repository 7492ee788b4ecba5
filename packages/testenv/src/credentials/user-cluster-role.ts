/** RBAC for testenv's own components that read the API as users (a client certificate each). Pure. */

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/**
 * A ClusterRole of `rules` and its binding to the user `name` (a client certificate's common
 * name), both named after the user, so that what a component may do is read off one object.
 *
 * @example
 * ```ts
 * const [role, binding] = userClusterRole('kanri-testenv:coredns', [{ apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] }]);
 * ```
 */
export function userClusterRole(
  name: string,
  rules: readonly PolicyRule[],
): readonly [Record<string, unknown>, Record<string, unknown>] {
  return [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name }],
    },
  ];
}
