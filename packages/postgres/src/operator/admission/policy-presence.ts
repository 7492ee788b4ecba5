/**
 * Whether the admission policies the operator relies on are in force: each ValidatingAdmissionPolicy
 * and its binding exists, says what this operator version installs, and denies. Without them an
 * instance could relabel any Pod of its namespace, a namespace user could join a cluster's
 * NetworkPolicy, and the operator's own writes would be unbounded; so the operator creates no
 * instance Pod until they are (policy-gate.ts). Pure.
 */

/** What the API server holds under one expected name: the object, nothing, or a refusal to show it. */
export type Observed = { readonly object: Record<string, unknown> } | 'missing' | 'forbidden' | 'unserved';

/** Why the policies are not in force, for the PostgresCluster's condition. */
export interface PolicyProblem {
  readonly reason: 'PolicyMissing' | 'PolicyOutdated' | 'PolicyUnreadable' | 'PoliciesUnsupported';
  readonly message: string;
}

/** The key `observed` is read with: kind and name. */
export const observedKey = (kind: string, name: string) => `${kind}/${name}`;

type Spec = Record<string, unknown>;
const specOf = (o: Record<string, unknown>) => (o.spec ?? {}) as Spec;
const expressions = (list: unknown, ...fields: string[]) =>
  ((list as Record<string, unknown>[] | undefined) ?? []).map((item) => fields.map((f) => item[f] ?? null));

/**
 * What decides a policy's effect, leaving out what the API server fills in itself (defaults such as
 * `matchPolicy`, `scope`, empty selectors): its expressions, params and the requests it matches.
 */
function policyFingerprint(policy: Record<string, unknown>): string {
  const spec = specOf(policy);
  const constraints = (spec.matchConstraints ?? {}) as Spec;
  const rules = (list: unknown) =>
    ((list as Record<string, unknown>[] | undefined) ?? []).map((r) => [r.apiGroups, r.resources, r.operations]);
  return JSON.stringify({
    validations: expressions(spec.validations, 'expression'),
    matchConditions: expressions(spec.matchConditions, 'name', 'expression'),
    variables: expressions(spec.variables, 'name', 'expression'),
    paramKind: spec.paramKind ?? null,
    resourceRules: rules(constraints.resourceRules),
    excludeResourceRules: rules(constraints.excludeResourceRules),
    objectSelector: constraints.objectSelector ?? {},
    failurePolicy: spec.failurePolicy ?? 'Fail',
  });
}

/** A binding in force: it names the policy, denies, looks its params up as expected, and narrows nothing. */
function bindingFingerprint(binding: Record<string, unknown>): string {
  const spec = specOf(binding);
  const match = (spec.matchResources ?? {}) as Spec;
  const narrowed = ['resourceRules', 'excludeResourceRules'].some((f) => ((match[f] as unknown[]) ?? []).length > 0);
  const selects = ['namespaceSelector', 'objectSelector'].some((f) => Object.keys((match[f] as Spec) ?? {}).length > 0);
  return JSON.stringify({
    policyName: spec.policyName,
    denies: ((spec.validationActions as string[] | undefined) ?? []).includes('Deny'),
    paramRef: spec.paramRef ?? null,
    narrowed: narrowed || selects,
  });
}

const fingerprint = (o: Record<string, unknown>) =>
  o.kind === 'ValidatingAdmissionPolicy' ? policyFingerprint(o) : bindingFingerprint(o);

/**
 * The first reason the `expected` policies and bindings are not in force, or undefined when they
 * are. `vouched` (`KANRI_ADMISSION_POLICIES=installed`) accepts what the operator may not read; a
 * policy it can read and finds missing or different is a problem still.
 *
 * @example
 * ```ts
 * const problem = policyProblem(postgresOperator.policies(), observed, false);
 * if (problem) ctx.log.warn(problem.message);
 * ```
 */
export function policyProblem(
  expected: readonly Record<string, unknown>[],
  observed: ReadonlyMap<string, Observed>,
  vouched: boolean,
): PolicyProblem | undefined {
  for (const want of expected) {
    const name = (want.metadata as { name: string }).name;
    const kind = String(want.kind);
    const found = observed.get(observedKey(kind, name)) ?? 'missing';
    const what = `${kind} ${name}`;
    if (found === 'unserved') {
      return {
        reason: 'PoliciesUnsupported',
        message: `the API server serves no ${kind} (admissionregistration.k8s.io/v1 needs Kubernetes 1.30 or later): no instance Pods are created without ${name}`,
      };
    }
    if (found === 'forbidden') {
      if (vouched) continue;
      return {
        reason: 'PolicyUnreadable',
        message: `the operator may not read ${what}: grant it get on it, or set KANRI_ADMISSION_POLICIES=installed where the installer applied the policies; no instance Pods are created until then`,
      };
    }
    if (found === 'missing') {
      return {
        reason: 'PolicyMissing',
        message: `${what} is not installed: no instance Pods are created until the operator's admission policies are (they keep instances, namespace users and the operator to their own objects)`,
      };
    }
    if (fingerprint(found.object) !== fingerprint(want)) {
      return {
        reason: 'PolicyOutdated',
        message: `${what} differs from what this operator installs (an older or edited copy): re-apply the operator's admission policies; no instance Pods are created until then`,
      };
    }
  }
  return undefined;
}
