/**
 * The pieces Kanri's ValidatingAdmissionPolicies are written with (contract/*-admission-policy.ts):
 * CEL fragments over a request's identity and objects, and the policy and binding objects. Pure;
 * not part of the package's exports.
 */

/** The `userInfo.extra` key naming the Pod a ServiceAccount token is bound to. */
export const POD_NAME = 'authentication.kubernetes.io/pod-name';

/** A CEL string literal (the values quoted are Kanri's own names: no quote inside). */
export const q = (s: string) => `'${s}'`;

/** `path.field`, or an empty map when the object has none. */
export const orEmpty = (path: string, field: string) => `(has(${path}.${field}) ? ${path}.${field} : {})`;

/** Every key of `next` but `free` keeps its value from `prev`, and none of `prev`'s disappears. */
export const onlyChanged = (prev: string, next: string, free: readonly string[]) => {
  const isFree = (k: string) => (free.length > 0 ? free.map((f) => `${k} == ${q(f)}`).join(' || ') : 'false');
  return (
    `${next}.all(k, ${isFree('k')} || (k in ${prev} && ${prev}[k] == ${next}[k])) && ` +
    `${prev}.all(k, ${isFree('k')} || k in ${next})`
  );
};

/** `variables.pod`: the Pod the request's token is bound to, or '' for a token bound to none. */
export const boundPodVariable = {
  name: 'pod',
  expression: `${q(POD_NAME)} in request.userInfo.extra && size(request.userInfo.extra[${q(POD_NAME)}]) > 0 ? request.userInfo.extra[${q(POD_NAME)}][0] : ''`,
};

/** Each validation answers 403 Forbidden (the default is 422 Invalid: the object is fine, the writer is not). */
export const forbidden = (validations: readonly Record<string, string>[]) =>
  validations.map((v) => ({ ...v, reason: 'Forbidden' }));

/**
 * A policy that applies to the requests `matchConditions` select, failing closed.
 *
 * @example
 * ```ts
 * admissionPolicy('x.postgres.kanri.dev', [{ name: 'm', expression: 'true' }], { validations: [] });
 * ```
 */
export function admissionPolicy(name: string, matchConditions: readonly unknown[], spec: Record<string, unknown>) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'kanri' } },
    spec: { failurePolicy: 'Fail', matchConditions, ...spec },
  };
}

/** The binding that puts the policy of the same name in force (deny). */
export function admissionBinding(policyName: string) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName, labels: { 'app.kubernetes.io/managed-by': 'kanri' } },
    spec: { policyName, validationActions: ['Deny'] },
  };
}
