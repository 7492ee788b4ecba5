/**
 * What an operator's own identity may write, as ValidatingAdmissionPolicies keyed on its
 * ServiceAccount. RBAC has to grant an operator every write on Secrets, ServiceAccounts, Roles,
 * Pods, Leases… in every namespace (it makes them for its resources wherever those are, and may
 * grant a Role only what it holds itself), which is cluster-admin in effect. These policies narrow
 * the writes to what it owns:
 *
 * - every namespaced object it creates, changes or deletes carries the ownership label, valued with
 *   its owner's name, and is named after that owner (`<owner>` or `<owner>-…`);
 * - it creates one only with `app.kubernetes.io/managed-by: kanri`, a controller reference to an
 *   owner of that name, and only in a namespace that holds an object of the owner's kind whose uid
 *   that reference names (the second policy, which has the API server look the owners up as its
 *   params); an owner that does not exist leaves the object to the garbage collector;
 * - it changes one only if it carries the same label already, or none and is named after the
 *   owner (a Secret a user made ahead under the conventional name is adopted), or its controller
 *   reference names that owner (a label someone changed is put back);
 * - no ServiceAccount token Secrets; a RoleBinding binds only its own Role to its own
 *   ServiceAccounts of the binding's namespace;
 * - whatever further checks the definition adds (which ServiceAccount a Pod runs as, say);
 * - in its own namespace it writes, besides, only its leader-election Lease and the objects its
 *   namespace Role names (the CRD deletion guard's Secrets).
 *
 * Writes of the operator's own custom resources and of Events are left alone. Pure.
 */
import type { PolicyRule } from './rbac.js';

/** How an operator recognises the objects it owns. */
export interface Ownership {
  /** The label on every object the operator creates, valued with the owner's name (`postgres.kanri.dev/cluster`). */
  readonly label: string;
  /** The kind that owns them (one of the operator's resources): `apiVersion` and `kind`. */
  readonly owner: { readonly apiVersion: string; readonly kind: string };
  /** Further checks on creating and changing some resources. */
  readonly validations?: readonly OwnedWriteValidation[];
}

/** A CEL check on an object the operator creates or changes. */
export interface OwnedWriteValidation {
  /** The API group of `resources`; default the core group. */
  readonly group?: string;
  /** Plural resource names, for example `['pods']`. */
  readonly resources: readonly string[];
  /** CEL on `object` (and `oldObject` on update); `variables.owner` is the ownership label's value. */
  readonly expression: string;
  /** Why it is refused, as the 403 says it. */
  readonly message: string;
}

export interface OwnedWritesInput {
  /** The operator's name: its ServiceAccount's, and its policies' prefix. */
  readonly operator: string;
  /** The namespace it runs in (its ServiceAccount's). */
  readonly namespace: string;
  readonly ownership: Ownership;
  /** API groups of the operator's own custom resources: their writes are not narrowed here. */
  readonly ownGroups: readonly string[];
  /** Objects of its own namespace it writes by name (its leader Lease, the guard's Secrets). */
  readonly ownObjects: readonly { readonly group: string; readonly resource: string; readonly name: string }[];
}

/** The two policies' names (their bindings are named alike). */
export const ownedWritesPolicyNames = (operator: string) => ({
  writes: `${operator}-owned-writes.kanri.dev`,
  owners: `${operator}-owner-exists.kanri.dev`,
});

/** The username the API server gives the operator's ServiceAccount. */
export const serviceAccountUser = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

const MANAGED_BY = 'app.kubernetes.io/managed-by';
const q = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '');
/** `name` is the owner's own or `<owner>-…`. */
const namedAfterOwner = (name: string) => `(${name} == variables.owner || ${name}.startsWith(variables.owner + '-'))`;
/** Only for these resources, and not on delete. */
const on = (group: string, resources: readonly string[], expression: string) =>
  `request.resource.group != ${q(group)} || !(request.resource.resource in [${resources.map(q).join(', ')}]) || ` +
  `request.operation == 'DELETE' || (${expression})`;

const excluded = (ownGroups: readonly string[]) => [
  ...ownGroups.map((group) => ({ apiGroups: [group], apiVersions: ['*'], operations: ['*'], resources: ['*'] })),
  { apiGroups: [''], apiVersions: ['*'], operations: ['*'], resources: ['events'] },
  { apiGroups: ['events.k8s.io'], apiVersions: ['*'], operations: ['*'], resources: ['events'] },
];

const metadata = (name: string) => ({ name, labels: { [MANAGED_BY]: 'kanri' } });

/**
 * The policies and their bindings, ready to apply.
 *
 * @example
 * ```ts
 * const objects = ownedWritesPolicies({
 *   operator: 'website-operator', namespace: 'ops', ownGroups: ['example.com'],
 *   ownership: { label: 'example.com/website', owner: { apiVersion: 'example.com/v1', kind: 'Website' } },
 *   ownObjects: [{ group: 'coordination.k8s.io', resource: 'leases', name: 'website-operator-leader' }],
 * });
 * ```
 */
export function ownedWritesPolicies(input: OwnedWritesInput): Record<string, unknown>[] {
  const { label, owner } = input.ownership;
  const names = ownedWritesPolicyNames(input.operator);
  const user = serviceAccountUser(input.namespace, input.operator);
  const isOperator = { name: 'operator-identity', expression: `request.userInfo.username == ${q(user)}` };
  const own = input.ownObjects.map((o) => q(`${o.group}/${o.resource}/${o.name}`));
  const where = "request.resource.resource + ' ' + request.namespace + '/' + variables.name";
  const allNamespaced = [
    { apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*'], scope: 'Namespaced' },
  ];
  const writes = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: metadata(names.writes),
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: allNamespaced.map((r) => ({ ...r, operations: ['CREATE', 'UPDATE', 'DELETE'] })),
        excludeResourceRules: excluded(input.ownGroups),
      },
      matchConditions: [
        isOperator,
        {
          name: 'not-its-named-objects',
          expression:
            own.length === 0
              ? 'true'
              : `!(request.namespace == ${q(input.namespace)} && (request.resource.group + '/' + request.resource.resource + '/' + request.name) in [${own.join(', ')}])`,
        },
      ],
      variables: [
        { name: 'target', expression: "request.operation == 'DELETE' ? oldObject : object" },
        { name: 'name', expression: 'variables.target.metadata.name' },
        {
          name: 'labels',
          expression: 'has(variables.target.metadata.labels) ? variables.target.metadata.labels : {}',
        },
        { name: 'owner', expression: `${q(label)} in variables.labels ? variables.labels[${q(label)}] : ''` },
        {
          // The owner the old object's controller reference names: a label someone changed is put back.
          name: 'oldController',
          expression: `request.operation == 'UPDATE' && has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences.filter(r, has(r.controller) && r.controller && r.kind == ${q(owner.kind)}).map(r, r.name) : []`,
        },
        {
          name: 'oldOwner',
          expression: `request.operation == 'UPDATE' && has(oldObject.metadata.labels) && ${q(label)} in oldObject.metadata.labels ? oldObject.metadata.labels[${q(label)}] : ''`,
        },
      ],
      validations: [
        {
          expression: "variables.owner != ''",
          messageExpression: `'the operator writes only objects labelled ${label} (its own), not ' + ${where}`,
        },
        {
          expression: namedAfterOwner('variables.name'),
          messageExpression: `'the operator writes only objects named after their ${owner.kind} (' + variables.owner + ' or ' + variables.owner + '-…), not ' + ${where}`,
        },
        {
          expression:
            "request.operation != 'UPDATE' || variables.oldOwner == '' || variables.oldOwner == variables.owner || variables.owner in variables.oldController",
          messageExpression: `'the operator may not move ' + ${where} + ' from ${owner.kind} ' + variables.oldOwner + ' to ' + variables.owner`,
        },
        {
          expression:
            `request.operation != 'CREATE' || (${q(MANAGED_BY)} in variables.labels && variables.labels[${q(MANAGED_BY)}] == 'kanri' && ` +
            `has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, ` +
            `has(r.controller) && r.controller && r.kind == ${q(owner.kind)} && r.apiVersion.startsWith(${q(`${groupOf(owner.apiVersion)}/`)}) && r.name == variables.owner))`,
          messageExpression: `'the operator creates ' + ${where} + ' only labelled ${MANAGED_BY}=kanri, and owned (controller reference) by ${owner.kind} ' + variables.owner`,
        },
        {
          expression: on('', ['secrets'], "!has(object.type) || object.type != 'kubernetes.io/service-account-token'"),
          message:
            "the operator may not create ServiceAccount token Secrets (they would hand it another account's token)",
        },
        {
          expression: on(
            'rbac.authorization.k8s.io',
            ['rolebindings'],
            `object.roleRef.kind == 'Role' && ${namedAfterOwner('object.roleRef.name')} && (!has(object.subjects) || object.subjects.all(s, ` +
              `s.kind == 'ServiceAccount' && (!has(s.namespace) || s.namespace == request.namespace) && ${namedAfterOwner('s.name')}))`,
          ),
          messageExpression: `'the operator binds only its own Roles to its own ServiceAccounts of the namespace (named after ' + variables.owner + '), not in ' + ${where}`,
        },
        ...(input.ownership.validations ?? []).map((v) => ({
          expression: on(v.group ?? '', v.resources, v.expression),
          messageExpression: `${q(`${v.message}: `)} + ${where}`,
        })),
      ].map((v) => ({ ...v, reason: 'Forbidden' })),
    },
  };
  const owners = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: metadata(names.owners),
    spec: {
      failurePolicy: 'Fail',
      paramKind: { apiVersion: owner.apiVersion, kind: owner.kind },
      matchConstraints: {
        resourceRules: allNamespaced.map((r) => ({ ...r, operations: ['CREATE'] })),
        excludeResourceRules: excluded(input.ownGroups),
        // What the first policy makes every object the operator creates carry. Only creation: the
        // garbage collector and finalizers must still update and delete them once the owner is gone.
        objectSelector: {
          matchLabels: { [MANAGED_BY]: 'kanri' },
          matchExpressions: [{ key: label, operator: 'Exists' }],
        },
      },
      matchConditions: [isOperator],
      validations: [
        {
          expression:
            '!has(object.metadata.ownerReferences) || object.metadata.ownerReferences.all(r, ' +
            `r.kind != ${q(owner.kind)} || r.name != params.metadata.name || r.uid == params.metadata.uid)`,
          messageExpression: `'the operator creates ' + request.resource.resource + ' ' + request.namespace + '/' + object.metadata.name + ' only for the ${owner.kind} ' + params.metadata.name + ' that exists (its uid)'`,
          reason: 'Forbidden',
        },
      ],
    },
  };
  const binding = (policyName: string, paramRef?: Record<string, unknown>) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: metadata(policyName),
    spec: { policyName, validationActions: ['Deny'], ...(paramRef ? { paramRef } : {}) },
  });
  return [
    writes,
    binding(names.writes),
    owners,
    // Every owner in the request's namespace is a param; none found refuses the request.
    binding(names.owners, { selector: {}, parameterNotFoundAction: 'Deny' }),
  ];
}

/** The objects of its own namespace `rules` name (a Role's `resourceNames`), as `ownObjects` lists them. */
export function namedObjects(rules: readonly PolicyRule[]): OwnedWritesInput['ownObjects'] {
  return rules.flatMap((rule) =>
    (rule.resourceNames ?? []).flatMap((name) =>
      rule.apiGroups.flatMap((group) => rule.resources.map((resource) => ({ group, resource, name }))),
    ),
  );
}
