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

/** A rule and why the operator holds it: what the install's documentation lists beside each verb. */
export interface ExplainedRule extends PolicyRule {
  readonly reason: string;
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
  /** Extra rules the operator declares it needs, each best with its `reason`. */
  readonly extraRules?: readonly (PolicyRule & { readonly reason?: string })[];
  /**
   * Rules on cluster-scoped objects (reading its own admission policies, say): in the ClusterRole,
   * and left out of an install for one namespace, whose Roles could not grant them.
   */
  readonly clusterRules?: readonly (PolicyRule & { readonly reason?: string })[];
  /** Rules in the operator's own namespace only (for example its webhook certificate Secret): Role `<name>-namespace`. */
  readonly namespaceRules?: readonly (PolicyRule & { readonly reason?: string })[];
  /** Plural resource names for kinds the simple English rules get wrong, keyed `group/Kind`. */
  readonly plurals?: Readonly<Record<string, string>>;
  /** Who gets the roles. Default: the operator's ServiceAccount. */
  readonly subject?: { readonly kind: 'ServiceAccount' | 'User' | 'Group'; readonly name: string };
}

/** One role of an install with the rules it grants, each with its reason, before rules on one resource merge. */
export interface ExplainedRole {
  readonly kind: 'Role' | 'ClusterRole';
  readonly name: string;
  /** Unset for a ClusterRole. */
  readonly namespace?: string;
  readonly rules: readonly ExplainedRule[];
}

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete'];

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '');

/** `rule` as RBAC takes it: its reason, and any other key RBAC does not know, left out. */
export function toPolicyRule(rule: PolicyRule): PolicyRule {
  return {
    apiGroups: [...rule.apiGroups],
    resources: [...rule.resources],
    verbs: [...rule.verbs],
    ...(rule.resourceNames?.length ? { resourceNames: [...rule.resourceNames] } : {}),
  };
}

const explained = (rule: PolicyRule & { readonly reason?: string }, fallback: string): ExplainedRule => ({
  ...toPolicyRule(rule),
  reason: rule.reason ?? fallback,
});

/**
 * What the controllers need, rule by rule with the reason for each, unmerged: the primary kinds,
 * their status, the kinds they own and watch, Events, and the extra rules.
 *
 * @example
 * ```ts
 * for (const r of explainRules([websiteController])) console.log(r.resources.join(), r.verbs.join(), r.reason);
 * ```
 */
export function explainRules(
  controllers: readonly ControllerDefinition<never>[],
  options: Pick<RbacOptions, 'plurals' | 'extraRules'> = {},
): ExplainedRule[] {
  const rules: ExplainedRule[] = [];
  const pluralOf = (apiVersion: string, kind: string) =>
    options.plurals?.[`${groupOf(apiVersion)}/${kind}`] ?? pluralize(kind);
  const need = (apiVersion: string, kind: string, verbs: readonly string[], reason: string, subresource?: string) => {
    const group = groupOf(apiVersion);
    const plural = pluralOf(apiVersion, kind);
    rules.push({
      apiGroups: [group],
      resources: [subresource ? `${plural}/${subresource}` : plural],
      verbs: [...verbs],
      reason,
    });
  };
  for (const c of controllers) {
    const primary = pluralOf(c.apiVersion, c.kind);
    need(
      c.apiVersion,
      c.kind,
      [...READ, 'update', 'patch'],
      `reconciles its ${primary} (reads, follows, sets finalizers)`,
    );
    need(c.apiVersion, c.kind, ['get', 'update', 'patch'], `writes the status of its ${primary}`, 'status');
    for (const owned of c.owns)
      need(
        owned.apiVersion,
        owned.kind,
        [...READ, ...WRITE],
        `applies and deletes the ${pluralOf(owned.apiVersion, owned.kind)} its ${primary} own`,
      );
    for (const watched of c.watches)
      need(
        watched.apiVersion,
        watched.kind,
        READ,
        `the ${primary} controller follows ${pluralOf(watched.apiVersion, watched.kind)}`,
      );
  }
  rules.push({
    apiGroups: ['events.k8s.io'],
    resources: ['events'],
    verbs: ['create', 'patch'],
    reason: 'records Events about what it does',
  });
  for (const extra of options.extraRules ?? []) rules.push(explained(extra, 'declared by the operator (extraRules)'));
  return rules;
}

/**
 * Rules merged per group and resource (verbs united), rules that name objects kept apart, sorted
 * for stable output, without their reasons.
 */
export function mergeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const verbs = new Map<string, Set<string>>();
  for (const rule of rules) {
    if (rule.resourceNames?.length) continue;
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = `${group}\u0000${resource}`;
        const set = verbs.get(key) ?? new Set<string>();
        for (const verb of rule.verbs) set.add(verb);
        verbs.set(key, set);
      }
    }
  }
  const merged: PolicyRule[] = [...verbs].map(([key, set]) => {
    const [group, resource] = key.split('\u0000') as [string, string];
    return { apiGroups: [group], resources: [resource], verbs: [...set].sort() };
  });
  merged.push(...rules.filter((r) => r.resourceNames?.length).map(toPolicyRule));
  return merged.sort((a, b) =>
    `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`),
  );
}

/** The rules the controllers need, merged per group and resource, sorted for stable output. */
export function deriveRules(
  controllers: readonly ControllerDefinition<never>[],
  options: Pick<RbacOptions, 'plurals' | 'extraRules'> = {},
): PolicyRule[] {
  return mergeRules(explainRules(controllers, options));
}

/**
 * Every role an operator's install grants, with each rule's reason: what {@link deriveRbac}
 * writes, before the rules on one resource merge.
 *
 * @example
 * ```ts
 * for (const role of explainRbac([websiteController], { name: 'website-operator', namespace: 'ops' }))
 *   for (const rule of role.rules) console.log(role.kind, role.name, rule.resources[0], rule.verbs.join(), rule.reason);
 * ```
 */
export function explainRbac(
  controllers: readonly ControllerDefinition<never>[],
  options: RbacOptions,
): ExplainedRole[] {
  const roles: ExplainedRole[] = [];
  const main = [
    ...explainRules(controllers, options),
    ...(options.watchNamespace
      ? []
      : (options.clusterRules ?? []).map((r) => explained(r, 'declared by the operator (clusterRules)'))),
  ];
  roles.push(
    options.watchNamespace
      ? { kind: 'Role', name: options.name, namespace: options.watchNamespace, rules: main }
      : { kind: 'ClusterRole', name: options.name, rules: main },
  );
  if (options.leaderElection ?? true) {
    roles.push({
      kind: 'Role',
      name: `${options.name}-leader-election`,
      namespace: options.namespace,
      rules: [
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          verbs: ['create', 'get', 'list', 'update', 'watch'],
          reason: `leader election on its Lease \`${options.name}-leader\` (create cannot be limited to a name)`,
        },
      ],
    });
  }
  if (options.namespaceRules?.length) {
    roles.push({
      kind: 'Role',
      name: `${options.name}-namespace`,
      namespace: options.namespace,
      rules: options.namespaceRules.map((r) => explained(r, 'declared by the operator (namespaceRules)')),
    });
  }
  return roles;
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
  const objects: Record<string, unknown>[] = [];
  if (!options.subject) {
    objects.push({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: options.name, namespace: options.namespace, labels },
    });
  }
  // Each role and the binding that grants it to the subject.
  for (const role of explainRbac(controllers, options)) {
    const metadata = { name: role.name, ...(role.namespace ? { namespace: role.namespace } : {}), labels };
    objects.push({ apiVersion: rbac, kind: role.kind, metadata, rules: mergeRules(role.rules) });
    objects.push({
      apiVersion: rbac,
      kind: `${role.kind}Binding`,
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: role.kind, name: role.name },
      subjects: [subject],
    });
  }
  return objects;
}
