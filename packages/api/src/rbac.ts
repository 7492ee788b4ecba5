/**
 * RBAC derived from what controllers declare: exactly the verbs on exactly the resources they
 * read and write, plus the leader-election Lease and Events, and nothing else. Pure.
 *
 * A controller's primary kind needs read and watch, `update`/`patch` (finalizers) and the status
 * subresource; owned kinds need read, watch and every write server-side apply and scaling down
 * use (`create`, `update`, `patch`, `delete`); watched kinds need read and watch.
 */
import type { ControllerDefinition } from '@kanri/runtime';
import { pluralize } from './define-resource.js';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface RbacOptions {
  /** Operator name: names the ServiceAccount, roles and bindings. */
  readonly name: string;
  /** Where the operator runs (its ServiceAccount, Lease and Role for the Lease). */
  readonly namespace: string;
  /** Watch only this namespace: emits Roles instead of a ClusterRole. */
  readonly watchNamespace?: string;
  /** Adds the Lease permissions. Default true. */
  readonly leaderElection?: boolean;
  /** Extra rules the operator declares it needs. */
  readonly extraRules?: readonly PolicyRule[];
  /** Rules in the operator's own namespace only (for example its webhook certificate Secret): Role `<name>-namespace`. */
  readonly namespaceRules?: readonly PolicyRule[];
  /** Plural resource names for kinds the simple English rules get wrong, keyed `group/Kind`. */
  readonly plurals?: Readonly<Record<string, string>>;
  /** Who gets the roles. Default: the operator's ServiceAccount. */
  readonly subject?: { readonly kind: 'ServiceAccount' | 'User' | 'Group'; readonly name: string };
}

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete'];

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '');

/** The rules the controllers need, merged per group and resource, sorted for stable output. */
export function deriveRules(
  controllers: readonly ControllerDefinition<never>[],
  options: Pick<RbacOptions, 'plurals' | 'extraRules'> = {},
): PolicyRule[] {
  const verbs = new Map<string, Set<string>>();
  const add = (group: string, resource: string, wanted: readonly string[]) => {
    const key = `${group}\u0000${resource}`;
    const set = verbs.get(key) ?? new Set<string>();
    for (const verb of wanted) set.add(verb);
    verbs.set(key, set);
  };
  const need = (apiVersion: string, kind: string, wanted: readonly string[], subresource?: string) => {
    const group = groupOf(apiVersion);
    const plural = options.plurals?.[`${group}/${kind}`] ?? pluralize(kind);
    add(group, subresource ? `${plural}/${subresource}` : plural, wanted);
  };
  for (const c of controllers) {
    need(c.apiVersion, c.kind, [...READ, 'update', 'patch']);
    need(c.apiVersion, c.kind, ['get', 'update', 'patch'], 'status');
    for (const owned of c.owns) need(owned.apiVersion, owned.kind, [...READ, ...WRITE]);
    for (const watched of c.watches) need(watched.apiVersion, watched.kind, READ);
  }
  add('events.k8s.io', 'events', ['create', 'patch']);
  // Extra rules merge into the derived ones unless they name objects, which must stay separate.
  for (const extra of options.extraRules ?? []) {
    if (extra.resourceNames?.length) continue;
    for (const group of extra.apiGroups) for (const resource of extra.resources) add(group, resource, extra.verbs);
  }
  const rules = [...verbs].map(([key, set]) => {
    const [group, resource] = key.split('\u0000') as [string, string];
    return { apiGroups: [group], resources: [resource], verbs: [...set].sort() };
  });
  rules.push(...(options.extraRules ?? []).filter((r) => r.resourceNames?.length).map((r) => ({ ...r })));
  return rules.sort((a, b) =>
    `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`),
  );
}

/**
 * The ServiceAccount, roles and bindings for an operator.
 *
 * @example
 * ```ts
 * const manifests = deriveRbac([websiteController], { name: 'website-operator', namespace: 'operators' });
 * for (const m of manifests) await client.apply(m, { fieldManager: 'installer' });
 * ```
 */
export function deriveRbac(
  controllers: readonly ControllerDefinition<never>[],
  options: RbacOptions,
): Record<string, unknown>[] {
  const subject = options.subject
    ? options.subject.kind === 'ServiceAccount'
      ? { kind: 'ServiceAccount', name: options.subject.name, namespace: options.namespace }
      : { kind: options.subject.kind, name: options.subject.name, apiGroup: 'rbac.authorization.k8s.io' }
    : { kind: 'ServiceAccount', name: options.name, namespace: options.namespace };
  const rbac = 'rbac.authorization.k8s.io/v1';
  const labels = { 'app.kubernetes.io/name': options.name, 'app.kubernetes.io/managed-by': 'kanri' };
  const rules = deriveRules(controllers, options);
  const objects: Record<string, unknown>[] = [];
  if (!options.subject) {
    objects.push({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: options.name, namespace: options.namespace, labels },
    });
  }
  /** A role and the binding that grants it to the subject. */
  const bound = (
    kind: 'Role' | 'ClusterRole',
    name: string,
    namespace: string | undefined,
    roleRules: readonly PolicyRule[],
  ) => {
    const metadata = { name, ...(namespace ? { namespace } : {}), labels };
    objects.push({ apiVersion: rbac, kind, metadata, rules: roleRules.map((r) => ({ ...r })) });
    objects.push({
      apiVersion: rbac,
      kind: `${kind}Binding`,
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
      subjects: [subject],
    });
  };
  if (options.watchNamespace) bound('Role', options.name, options.watchNamespace, rules);
  else bound('ClusterRole', options.name, undefined, rules);
  if (options.leaderElection ?? true) {
    const leaseRules: PolicyRule[] = [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['create', 'get', 'list', 'update', 'watch'],
      },
    ];
    bound('Role', `${options.name}-leader-election`, options.namespace, leaseRules);
  }
  if (options.namespaceRules?.length)
    bound('Role', `${options.name}-namespace`, options.namespace, options.namespaceRules);
  return objects;
}
